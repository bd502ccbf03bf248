package docker

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"
)

// cliConfig is a docker CLI configuration directory made in a test.
type cliConfig struct {
	t   *testing.T
	dir string
}

func newCLIConfig(t *testing.T) *cliConfig { return &cliConfig{t: t, dir: t.TempDir()} }

func (c *cliConfig) write(rel, content string) string {
	c.t.Helper()
	p := filepath.Join(c.dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		c.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		c.t.Fatal(err)
	}
	return p
}

func contextID(name string) string {
	sum := sha256.Sum256([]byte(name))
	return hex.EncodeToString(sum[:])
}

// context stores a context as `docker context create NAME --docker
// host=HOST` does.
func (c *cliConfig) context(name, host string, skipTLSVerify bool) string {
	c.t.Helper()
	meta, err := json.Marshal(map[string]any{
		"Name":      name,
		"Metadata":  map[string]any{"Description": "made by a test"},
		"Endpoints": map[string]any{"docker": map[string]any{"Host": host, "SkipTLSVerify": skipTLSVerify}},
	})
	if err != nil {
		c.t.Fatal(err)
	}
	return c.write(filepath.Join("contexts", "meta", contextID(name), "meta.json"), string(meta))
}

func (c *cliConfig) current(name string) string {
	return c.write("config.json", `{"auths": {}, "currentContext": "`+name+`"}`)
}

// env is a getenv over a map.
func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestEndpointOrder(t *testing.T) {
	c := newCLIConfig(t)
	cfgFile := c.current("fromfile")
	c.context("fromfile", "unix:///run/fromfile.sock", false)
	c.context("fromenv", "tcp://127.0.0.1:2375", false)
	for _, tc := range []struct {
		name, cfgHost string
		env           map[string]string
		host, source  string
	}{
		{"Config.Host first", "unix:///run/config.sock", map[string]string{"DOCKER_HOST": "unix:///run/env.sock", "DOCKER_CONTEXT": "fromenv", "DOCKER_CONFIG": c.dir},
			"unix:///run/config.sock", "Config.Host"},
		{"DOCKER_HOST over DOCKER_CONTEXT", "", map[string]string{"DOCKER_HOST": "unix:///run/env.sock", "DOCKER_CONTEXT": "fromenv", "DOCKER_CONFIG": c.dir},
			"unix:///run/env.sock", "DOCKER_HOST"},
		{"DOCKER_CONTEXT over currentContext", "", map[string]string{"DOCKER_CONTEXT": "fromenv", "DOCKER_CONFIG": c.dir},
			"tcp://127.0.0.1:2375", `context "fromenv" (DOCKER_CONTEXT)`},
		{"currentContext", "", map[string]string{"DOCKER_CONFIG": c.dir},
			"unix:///run/fromfile.sock", `context "fromfile" (currentContext in ` + cfgFile + `)`},
		{"DOCKER_CONTEXT default", "", map[string]string{"DOCKER_CONTEXT": "default", "DOCKER_CONFIG": c.dir},
			"", "the default socket"},
		{"no config file", "", map[string]string{"DOCKER_CONFIG": t.TempDir()},
			"", "the default socket"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ep, err := resolveEndpoint(tc.cfgHost, env(tc.env))
			if err != nil {
				t.Fatal(err)
			}
			if ep.host != tc.host || ep.source != tc.source {
				t.Fatalf("got host %q from %q, want %q from %q", ep.host, ep.source, tc.host, tc.source)
			}
		})
	}
	// Without DOCKER_CONFIG, the store is ~/.docker.
	home := t.TempDir()
	h := &cliConfig{t: t, dir: filepath.Join(home, ".docker")}
	h.context("home", "unix:///run/home.sock", false)
	ep, err := resolveEndpoint("", env(map[string]string{"HOME": home, "DOCKER_CONTEXT": "home"}))
	if err != nil || ep.host != "unix:///run/home.sock" || ep.source != `context "home" (DOCKER_CONTEXT)` {
		t.Fatalf("~/.docker: %+v, %v", ep, err)
	}
	// currentContext "default" is the default socket too.
	d := newCLIConfig(t)
	d.current("default")
	ep, err = resolveEndpoint("", env(map[string]string{"DOCKER_CONFIG": d.dir}))
	if err != nil || ep.host != "" || ep.source != "the default socket" {
		t.Fatalf("currentContext default: %+v, %v", ep, err)
	}
}

func TestEndpointErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(c *cliConfig) // stores the context "bad" and makes it current
		want  []string           // in the error
	}{
		{"config file not JSON", func(c *cliConfig) { c.write("config.json", "{currentContext: bad") },
			[]string{"config.json is not valid JSON", "DOCKER_HOST"}},
		{"context missing", func(c *cliConfig) { c.current("bad") },
			[]string{`"bad"`, "does not exist", filepath.Join("contexts", "meta", contextID("bad"), "meta.json"), "docker context create bad"}},
		{"meta not JSON", func(c *cliConfig) {
			c.current("bad")
			c.write(filepath.Join("contexts", "meta", contextID("bad"), "meta.json"), "{")
		}, []string{"meta.json is not valid JSON", "docker context rm"}},
		{"meta names another context", func(c *cliConfig) {
			c.current("bad")
			c.write(filepath.Join("contexts", "meta", contextID("bad"), "meta.json"), `{"Name":"other","Endpoints":{"docker":{"Host":"unix:///x"}}}`)
		}, []string{`names the context "other"`}},
		{"no docker endpoint", func(c *cliConfig) {
			c.current("bad")
			c.write(filepath.Join("contexts", "meta", contextID("bad"), "meta.json"), `{"Name":"bad","Endpoints":{}}`)
		}, []string{"no Endpoints.docker.Host", "docker context update bad"}},
		{"ssh endpoint", func(c *cliConfig) { c.current("bad"); c.context("bad", "ssh://me@example", false) },
			[]string{"over ssh", "ssh -NL", "DOCKER_HOST=unix://"}},
		{"unparsable endpoint", func(c *cliConfig) { c.current("bad"); c.context("bad", "/var/run/docker.sock", false) },
			[]string{`Endpoints.docker.Host "/var/run/docker.sock"`}},
		{"name with a path", func(c *cliConfig) { c.current("../bad") },
			[]string{`"../bad"`, "not a valid context name", "docker context ls"}},
		{"bad CA", func(c *cliConfig) {
			c.current("bad")
			c.context("bad", "tcp://127.0.0.1:2376", false)
			c.write(filepath.Join("contexts", "tls", contextID("bad"), "docker", "ca.pem"), "not a certificate")
		}, []string{"ca.pem holds no PEM certificate"}},
		{"certificate without key", func(c *cliConfig) {
			c.current("bad")
			c.context("bad", "tcp://127.0.0.1:2376", false)
			c.write(filepath.Join("contexts", "tls", contextID("bad"), "docker", "cert.pem"), "x")
		}, []string{"only one of cert.pem and key.pem"}},
		{"oversize config file", func(c *cliConfig) { c.write("config.json", `{"x":"`+strings.Repeat("a", maxContextFile)+`"}`) },
			[]string{"config.json is over"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCLIConfig(t)
			tc.setup(c)
			_, err := resolveEndpoint("", env(map[string]string{"DOCKER_CONFIG": c.dir}))
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("the error does not say %q:\n%v", w, err)
				}
			}
		})
	}
}

// pki is a CA with a server certificate for 127.0.0.1 and a client
// certificate, in PEM.
type pki struct {
	caPEM, serverCert, serverKey, clientCert, clientKey []byte
	pool                                                *x509.CertPool
}

func newPKI(t *testing.T) pki {
	t.Helper()
	key := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	encKey := func(k *ecdsa.PrivateKey) []byte {
		der, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	}
	caKey := key()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	issue := func(serial int64, usage x509.ExtKeyUsage, ips []net.IP) ([]byte, []byte) {
		k := key()
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "test"},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			ExtKeyUsage: []x509.ExtKeyUsage{usage}, KeyUsage: x509.KeyUsageDigitalSignature, IPAddresses: ips}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &k.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), encKey(k)
	}
	p := pki{caPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), pool: x509.NewCertPool()}
	p.pool.AddCert(ca)
	p.serverCert, p.serverKey = issue(2, x509.ExtKeyUsageServerAuth, []net.IP{net.IPv4(127, 0, 0, 1)})
	p.clientCert, p.clientKey = issue(3, x509.ExtKeyUsageClientAuth, nil)
	return p
}

// tlsEngine is an HTTPS server on 127.0.0.1 that answers the version call
// of the Engine API, and only to a client with a certificate of p's CA.
func tlsEngine(t *testing.T, p pki) string {
	t.Helper()
	pair, err := tls.X509KeyPair(p.serverCert, p.serverKey)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Api-Version", "1.41")
		if strings.HasSuffix(r.URL.Path, "/version") {
			_, _ = w.Write([]byte(`{"Version":"99.0-test","ApiVersion":"1.41","MinAPIVersion":"1.24"}`))
			return
		}
		_, _ = w.Write([]byte("OK"))
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: p.pool, MinVersion: tls.VersionTLS12}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return "tcp://" + srv.Listener.Addr().String()
}

// TestContextTLS reaches an engine over TLS with a context's material, as
// `docker context create --docker host=tcp://...,ca=...,cert=...,key=...`
// stores it.
func TestContextTLS(t *testing.T) {
	p := newPKI(t)
	host := tlsEngine(t, p)
	tlsFile := func(c *cliConfig, name, file string, data []byte) {
		c.write(filepath.Join("contexts", "tls", contextID(name), "docker", file), string(data))
	}
	version := func(t *testing.T, c *cliConfig, name string) (string, error) {
		t.Helper()
		t.Setenv("DOCKER_HOST", "")
		t.Setenv("DOCKER_CONFIG", c.dir)
		t.Setenv("DOCKER_CONTEXT", name)
		// Ignored for a context, as by the docker CLI.
		t.Setenv("DOCKER_CERT_PATH", filepath.Join(c.dir, "no-such-dir"))
		b, err := New(Config{})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = b.Close() }()
		if b.Host() != host || b.HostSource() != `context "`+name+`" (DOCKER_CONTEXT)` {
			t.Fatalf("host %s from %s", b.Host(), b.HostSource())
		}
		v, err := b.cli.ServerVersion(t.Context(), client.ServerVersionOptions{})
		return v.Version, err
	}

	t.Run("CA and client certificate", func(t *testing.T) {
		c := newCLIConfig(t)
		c.context("tls", host, false)
		tlsFile(c, "tls", "ca.pem", p.caPEM)
		tlsFile(c, "tls", "cert.pem", p.clientCert)
		tlsFile(c, "tls", "key.pem", p.clientKey)
		v, err := version(t, c, "tls")
		if err != nil || v != "99.0-test" {
			t.Fatalf("version %q, %v", v, err)
		}
	})
	t.Run("SkipTLSVerify without a CA", func(t *testing.T) {
		c := newCLIConfig(t)
		c.context("skip", host, true)
		tlsFile(c, "skip", "cert.pem", p.clientCert)
		tlsFile(c, "skip", "key.pem", p.clientKey)
		v, err := version(t, c, "skip")
		if err != nil || v != "99.0-test" {
			t.Fatalf("version %q, %v", v, err)
		}
	})
	t.Run("no CA and verification", func(t *testing.T) {
		c := newCLIConfig(t)
		c.context("verify", host, false)
		tlsFile(c, "verify", "cert.pem", p.clientCert)
		tlsFile(c, "verify", "key.pem", p.clientKey)
		if _, err := version(t, c, "verify"); err == nil || !strings.Contains(err.Error(), "certificate") {
			t.Fatalf("an engine whose certificate nothing vouches for was accepted: %v", err)
		}
	})
	t.Run("no client certificate", func(t *testing.T) {
		c := newCLIConfig(t)
		c.context("nocert", host, false)
		tlsFile(c, "nocert", "ca.pem", p.caPEM)
		if _, err := version(t, c, "nocert"); err == nil {
			t.Fatal("the engine answered a client without a certificate")
		}
	})
}
