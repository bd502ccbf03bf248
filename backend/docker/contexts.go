package docker

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/moby/moby/client"
)

// endpoint is the engine's address and where it came from, decided as the
// docker CLI decides it.
type endpoint struct {
	// host is the engine's address; empty means the client's default
	// socket.
	host string
	// source says where host came from, for messages and Enforcement.
	source string
	// context is the docker CLI context read, "" when none was.
	context string
	// tls is the context's TLS configuration; nil for a plain endpoint.
	tls *tls.Config
}

// Where an address comes from.
const (
	fromConfig  = "Config.Host"
	fromEnv     = "DOCKER_HOST"
	fromDefault = "the default socket"
)

// maxContextFile bounds the docker CLI's files read here.
const maxContextFile = 1 << 20

// contextName is what the docker CLI accepts as a context's name.
var contextName = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.+-]+$`)

// resolveEndpoint decides the engine's address: Config.Host, else
// $DOCKER_HOST, else the context named by $DOCKER_CONTEXT, else the
// currentContext of the docker CLI's config file ($DOCKER_CONFIG/config.json
// or ~/.docker/config.json), else the default socket. The context "default"
// is the default socket.
func resolveEndpoint(cfgHost string, getenv func(string) string) (endpoint, error) {
	if cfgHost != "" {
		return endpoint{host: cfgHost, source: fromConfig}, nil
	}
	if h := getenv("DOCKER_HOST"); h != "" {
		return endpoint{host: h, source: fromEnv}, nil
	}
	dir, err := configDir(getenv)
	if err != nil {
		return endpoint{}, err
	}
	name, from := getenv("DOCKER_CONTEXT"), "DOCKER_CONTEXT"
	if name == "" {
		file := filepath.Join(dir, "config.json")
		name, err = currentContext(file)
		if err != nil {
			return endpoint{}, err
		}
		from = "currentContext in " + file
	}
	if name == "" || name == "default" {
		return endpoint{source: fromDefault}, nil
	}
	return readContext(dir, name, from)
}

// configDir is the docker CLI's configuration directory.
func configDir(getenv func(string) string) (string, error) {
	if d := getenv("DOCKER_CONFIG"); d != "" {
		return d, nil
	}
	home := getenv("HOME")
	if home == "" {
		var err error
		if home, err = os.UserHomeDir(); err != nil {
			return "", fmt.Errorf("docker: no home directory to find the docker CLI's config.json in (%w); set DOCKER_HOST, or DOCKER_CONFIG to the directory holding config.json", err)
		}
	}
	return filepath.Join(home, ".docker"), nil
}

// currentContext reads the currentContext of the docker CLI's config file;
// a missing file means none.
func currentContext(file string) (string, error) {
	data, err := readBounded(file)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("docker: read the docker CLI's config file: %w; fix or remove it, or set DOCKER_HOST", err)
	}
	var cfg struct {
		CurrentContext string `json:"currentContext"`
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		return "", fmt.Errorf("docker: the docker CLI's config file %s is not valid JSON: %w; fix it, or set DOCKER_HOST (or DOCKER_CONTEXT) to choose the engine", file, err)
	}
	return cfg.CurrentContext, nil
}

// contextMeta is a context's meta.json as the docker CLI writes it.
type contextMeta struct {
	Name      string `json:"Name"`
	Endpoints map[string]struct {
		Host          string `json:"Host"`
		SkipTLSVerify bool   `json:"SkipTLSVerify"`
	} `json:"Endpoints"`
}

// readContext reads the docker endpoint of the context name, chosen by
// from, in the docker CLI's configuration directory dir.
func readContext(dir, name, from string) (endpoint, error) {
	what := fmt.Sprintf("the docker context %q (from %s)", name, from)
	if !contextName.MatchString(name) {
		return endpoint{}, fmt.Errorf("docker: %s is not a valid context name; run `docker context ls` for the names, or set DOCKER_HOST", what)
	}
	sum := sha256.Sum256([]byte(name))
	id := hex.EncodeToString(sum[:])
	file := filepath.Join(dir, "contexts", "meta", id, "meta.json")
	data, err := readBounded(file)
	if errors.Is(err, fs.ErrNotExist) {
		return endpoint{}, fmt.Errorf("docker: %s does not exist: there is no %s; create it with `docker context create %s --docker host=...`, choose another with `docker context use`, or set DOCKER_HOST", what, file, name)
	}
	if err != nil {
		return endpoint{}, fmt.Errorf("docker: read %s: %w; fix its permissions, or set DOCKER_HOST", what, err)
	}
	var meta contextMeta
	if err := json.Unmarshal(data, &meta); err != nil {
		return endpoint{}, fmt.Errorf("docker: %s: %s is not valid JSON: %w; recreate the context (`docker context rm` and `docker context create`), or set DOCKER_HOST", what, file, err)
	}
	if meta.Name != name {
		return endpoint{}, fmt.Errorf("docker: %s: %s names the context %q; recreate the context, or set DOCKER_HOST", what, file, meta.Name)
	}
	ep, ok := meta.Endpoints["docker"]
	if !ok || ep.Host == "" {
		return endpoint{}, fmt.Errorf("docker: %s: %s has no Endpoints.docker.Host; give it one with `docker context update %s --docker host=...`, or set DOCKER_HOST", what, file, name)
	}
	if scheme, _, _ := strings.Cut(ep.Host, "://"); scheme == "ssh" {
		return endpoint{}, fmt.Errorf("docker: %s: its endpoint %s is reached over ssh, which needs the docker CLI; forward the engine's socket (ssh -NL /tmp/docker.sock:/var/run/docker.sock HOST) and set DOCKER_HOST=unix:///tmp/docker.sock", what, ep.Host)
	}
	if _, err := client.ParseHostURL(ep.Host); err != nil {
		return endpoint{}, fmt.Errorf("docker: %s: %s has Endpoints.docker.Host %q: %w; fix it with `docker context update %s --docker host=...`, or set DOCKER_HOST", what, file, ep.Host, err, name)
	}
	tc, err := contextTLS(filepath.Join(dir, "contexts", "tls", id, "docker"), ep.SkipTLSVerify, what)
	if err != nil {
		return endpoint{}, err
	}
	return endpoint{host: ep.Host, source: fmt.Sprintf("context %q (%s)", name, from), context: name, tls: tc}, nil
}

// contextTLS is the TLS configuration of a context's docker endpoint from
// its TLS directory (ca.pem, cert.pem, key.pem, each optional, the key and
// certificate together), or nil when it has none and verifies certificates.
func contextTLS(dir string, skipVerify bool, what string) (*tls.Config, error) {
	read := func(name string) ([]byte, error) {
		data, err := readBounded(filepath.Join(dir, name))
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("docker: %s: %w; fix the file's permissions, or set DOCKER_HOST", what, err)
		}
		return data, nil
	}
	ca, err := read("ca.pem")
	if err != nil {
		return nil, err
	}
	cert, err := read("cert.pem")
	if err != nil {
		return nil, err
	}
	key, err := read("key.pem")
	if err != nil {
		return nil, err
	}
	if ca == nil && cert == nil && key == nil && !skipVerify {
		return nil, nil
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: skipVerify} // SkipTLSVerify, as the docker CLI honours it
	if ca != nil {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(ca) {
			return nil, fmt.Errorf("docker: %s: %s holds no PEM certificate; replace it with the engine's CA certificate, or set DOCKER_HOST", what, filepath.Join(dir, "ca.pem"))
		}
		tc.RootCAs = pool
	}
	switch {
	case cert != nil && key != nil:
		pair, err := tls.X509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("docker: %s: the client certificate %s and key %s: %w; replace them with an unencrypted PEM pair, or set DOCKER_HOST", what, filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem"), err)
		}
		tc.Certificates = []tls.Certificate{pair}
	case cert != nil || key != nil:
		return nil, fmt.Errorf("docker: %s: %s holds only one of cert.pem and key.pem; add the other, or remove both", what, dir)
	}
	return tc, nil
}

// readBounded reads a file of at most maxContextFile bytes.
func readBounded(file string) ([]byte, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	data, err := io.ReadAll(io.LimitReader(f, maxContextFile+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxContextFile {
		return nil, fmt.Errorf("%s is over %d bytes", file, maxContextFile)
	}
	return data, nil
}

// clientOpts are the client's options for the endpoint. For a context, as
// for the docker CLI, DOCKER_CERT_PATH and DOCKER_TLS_VERIFY do not apply:
// the context's TLS material does.
func (e endpoint) clientOpts() []client.Opt {
	if e.context == "" {
		opts := []client.Opt{client.FromEnv}
		if e.host != "" {
			opts = append(opts, client.WithHost(e.host))
		}
		return opts
	}
	opts := []client.Opt{client.WithAPIVersionFromEnv()}
	if e.tls != nil {
		opts = append(opts, client.WithHTTPClient(&http.Client{
			Transport:     &http.Transport{TLSClientConfig: e.tls},
			CheckRedirect: client.CheckRedirect,
		}))
	}
	return append(opts, client.WithHost(e.host))
}
