package deploy_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	extv1beta1 "sigs.k8s.io/agent-sandbox/extensions/api/v1beta1"
	"sigs.k8s.io/yaml"
)

// The server's contract, as the manifests must state it.
const (
	port      = 8080
	health    = "/health"
	secretEnv = "CODEMODE_SANDBOX_TOKEN"
)

// writable are the only paths the server and the code write to.
var writable = []string{"/workspace", "/tmp", "/tools"}

// cloudRunService is a Knative serving.knative.dev/v1 Service with the
// fields Cloud Run reads; its revision spec is a core PodSpec inline, as
// in Knative's own types.
type cloudRunService struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Template struct {
			metav1.ObjectMeta `json:"metadata"`
			Spec              revisionSpec `json:"spec"`
		} `json:"template"`
	} `json:"spec"`
}

type revisionSpec struct {
	corev1.PodSpec       `json:",inline"`
	ContainerConcurrency *int64 `json:"containerConcurrency,omitempty"`
	TimeoutSeconds       *int64 `json:"timeoutSeconds,omitempty"`
}

// decoders name the type each kind decodes into; a manifest of another
// kind fails the test, so no file goes unchecked.
var decoders = map[string]func() any{
	"serving.knative.dev/v1/Service":                     func() any { return new(cloudRunService) },
	"extensions.agents.x-k8s.io/v1beta1/SandboxTemplate": func() any { return new(extv1beta1.SandboxTemplate) },
	"extensions.agents.x-k8s.io/v1beta1/SandboxWarmPool": func() any { return new(extv1beta1.SandboxWarmPool) },
	"v1/Pod":                             func() any { return new(corev1.Pod) },
	"networking.k8s.io/v1/NetworkPolicy": func() any { return new(networkingv1.NetworkPolicy) },
}

// decode decodes one manifest strictly: an unknown, misspelt or misplaced
// field, or a key given twice, is an error.
func decode(data []byte) (any, error) {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(data, &tm); err != nil {
		return nil, err
	}
	mk, ok := decoders[tm.APIVersion+"/"+tm.Kind]
	if !ok {
		return nil, &unknownKind{tm.APIVersion + "/" + tm.Kind}
	}
	obj := mk()
	if err := yaml.UnmarshalStrict(data, obj); err != nil {
		return nil, err
	}
	// encoding/json matches keys without regard to case, so a misspelt
	// "readOnlyRootFileSystem" would pass: what was written must come
	// back, key for key, when the object is encoded again.
	var written, decoded any
	js, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(js, &written); err != nil {
		return nil, err
	}
	again, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(again, &decoded); err != nil {
		return nil, err
	}
	if err := contained(written, decoded, ""); err != nil {
		return nil, err
	}
	return obj, nil
}

// contained reports the first key or value of written that decoded does
// not hold exactly.
func contained(written, decoded any, path string) error {
	switch w := written.(type) {
	case map[string]any:
		d, ok := decoded.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: not an object after decoding", path)
		}
		for k, v := range w {
			dv, ok := d[k]
			if !ok {
				return fmt.Errorf("%s.%s: no such field (check its spelling and place)", path, k)
			}
			if err := contained(v, dv, path+"."+k); err != nil {
				return err
			}
		}
	case []any:
		d, ok := decoded.([]any)
		if !ok || len(d) != len(w) {
			return fmt.Errorf("%s: the list did not survive decoding", path)
		}
		for i := range w {
			if err := contained(w[i], d[i], fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	default:
		if fmt.Sprint(written) != fmt.Sprint(decoded) {
			return fmt.Errorf("%s: %v decodes as %v", path, written, decoded)
		}
	}
	return nil
}

type unknownKind struct{ kind string }

func (e *unknownKind) Error() string {
	return "no decoder for " + e.kind + ": add the kind to the table"
}

func manifests(t *testing.T) map[string]any {
	t.Helper()
	out := map[string]any{}
	err := filepath.WalkDir(".", func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() && d.Name() == "testdata" {
			return filepath.SkipDir // recorded API answers, not manifests
		}
		if err != nil || d.IsDir() || (filepath.Ext(p) != ".yaml" && filepath.Ext(p) != ".yml") {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		obj, err := decode(data)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			return nil
		}
		out[filepath.ToSlash(p)] = obj
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatal("no manifests found")
	}
	return out
}

func TestManifestsDecodeStrictly(t *testing.T) {
	want := []string{
		"cloudrun/service.yaml",
		"kubernetes/agent-sandbox/sandboxtemplate.yaml",
		"kubernetes/agent-sandbox/sandboxwarmpool.yaml",
		"kubernetes/plain/networkpolicy.yaml",
		"kubernetes/plain/pod.yaml",
	}
	got := manifests(t)
	for _, name := range want {
		if got[name] == nil {
			t.Errorf("%s did not decode", name)
		}
	}
}

// TestDecodingIsStrict: the check catches what it is for.
func TestDecodingIsStrict(t *testing.T) {
	data, err := os.ReadFile("kubernetes/plain/pod.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for name, bad := range map[string]string{
		"misspelt field":  strings.Replace(string(data), "readOnlyRootFilesystem", "readOnlyRootFileSystem", 1),
		"misplaced field": strings.Replace(string(data), "  restartPolicy: Never", "  containerConcurrency: 1\n  restartPolicy: Never", 1),
		"key twice":       strings.Replace(string(data), "  restartPolicy: Never", "  restartPolicy: Never\n  restartPolicy: Always", 1),
	} {
		if bad == string(data) {
			t.Fatalf("%s: the manifest did not change", name)
		}
		if _, err := decode([]byte(bad)); err == nil {
			t.Errorf("%s: decoded without an error", name)
		}
	}
}

// image is what the Dockerfile says about the server.
type image struct {
	uid        int64
	entrypoint []string
	expose     int
}

func readImage(t *testing.T) image {
	t.Helper()
	data, err := os.ReadFile("../images/sandbox/Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	var img image
	if m := regexp.MustCompile(`useradd [^\n]*--uid (\d+)`).FindSubmatch(data); m != nil {
		img.uid, _ = strconv.ParseInt(string(m[1]), 10, 64)
	}
	if m := regexp.MustCompile(`(?m)^ENTRYPOINT (\[.*\])$`).FindSubmatch(data); m != nil {
		if err := json.Unmarshal(m[1], &img.entrypoint); err != nil {
			t.Fatal(err)
		}
	}
	if m := regexp.MustCompile(`(?m)^EXPOSE (\d+)$`).FindSubmatch(data); m != nil {
		img.expose, _ = strconv.Atoi(string(m[1]))
	}
	if img.uid == 0 || len(img.entrypoint) == 0 || img.expose == 0 {
		t.Fatalf("the Dockerfile's uid, ENTRYPOINT or EXPOSE not found: %+v", img)
	}
	return img
}

// flagValue returns the value of --name in args.
func flagValue(args []string, name string) string {
	for i, a := range args {
		if a == "--"+name && i+1 < len(args) {
			return args[i+1]
		}
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v
		}
	}
	return ""
}

// serverBin builds cmd/codemode-sandbox, to ask it about its flags.
func serverBin(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "codemode-sandbox")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/codemode-sandbox")
	cmd.Dir = ".."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the server: %v\n%s", err, out)
	}
	return bin
}

// checkContainer holds a sandbox container to the server and its image.
func checkContainer(t *testing.T, where string, c corev1.Container, volumes []corev1.Volume, img image, bin string) {
	t.Helper()
	args := append(slices.Clone(img.entrypoint[1:]), c.Args...)
	// The server knows every flag given (it parses them all before -help).
	var stderr bytes.Buffer
	cmd := exec.Command(bin, append(slices.Clone(args), "-help")...)
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Errorf("%s: the server refuses the arguments %q: %v\n%s", where, args, err, stderr.String())
	}
	listen := flagValue(args, "listen")
	if !strings.HasSuffix(listen, ":"+strconv.Itoa(port)) {
		t.Errorf("%s: --listen %q, want port %d", where, listen, port)
	}
	if port != img.expose {
		t.Errorf("the image exposes %d, the manifests use %d", img.expose, port)
	}
	if len(c.Ports) != 1 || c.Ports[0].ContainerPort != port {
		t.Errorf("%s: container ports %+v, want %d", where, c.Ports, port)
	}
	probe := c.ReadinessProbe
	if probe == nil {
		probe = c.StartupProbe
	}
	if probe == nil || probe.HTTPGet == nil || probe.HTTPGet.Path != health || probe.HTTPGet.Port.IntValue() != port {
		t.Errorf("%s: the probe must GET %s on port %d: %+v", where, health, port, probe)
	}
	var secretOK bool
	for _, e := range c.Env {
		if e.Name == secretEnv {
			secretOK = e.Value == "" && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil
		}
	}
	if !secretOK {
		t.Errorf("%s: %s must come from a secret, not a literal", where, secretEnv)
	}
	if flagValue(args, "insecure-no-auth") != "" || slices.Contains(args, "--insecure-no-auth") {
		t.Errorf("%s: --insecure-no-auth in a deployment", where)
	}
	// Exactly the server's writable paths are mounted, each a bounded
	// emptyDir, and the server's --workdir and --files are among them.
	bounded := map[string]bool{}
	for _, v := range volumes {
		bounded[v.Name] = v.EmptyDir != nil && v.EmptyDir.SizeLimit != nil && !v.EmptyDir.SizeLimit.IsZero()
	}
	var mounted []string
	for _, m := range c.VolumeMounts {
		mounted = append(mounted, m.MountPath)
		if !bounded[m.Name] {
			t.Errorf("%s: %s is not a size-limited emptyDir", where, m.MountPath)
		}
	}
	slices.Sort(mounted)
	if want := slices.Sorted(slices.Values(writable)); !slices.Equal(mounted, want) {
		t.Errorf("%s: mounts %v, want %v", where, mounted, want)
	}
	for _, f := range []string{"workdir", "files"} {
		if v := flagValue(args, f); !slices.Contains(writable, v) {
			t.Errorf("%s: --%s %q is not a writable mount", where, f, v)
		}
	}
}

// checkPodSecurity holds a Kubernetes pod spec to a locked-down sandbox.
func checkPodSecurity(t *testing.T, where string, spec corev1.PodSpec, img image) {
	t.Helper()
	psc := spec.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser != img.uid {
		t.Errorf("%s: the pod must run as non-root user %d (the image's)", where, img.uid)
	}
	if spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("%s: restartPolicy %q, want Never: a finished sandbox must not serve again", where, spec.RestartPolicy)
	}
	if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
		t.Errorf("%s: the service account token must not be mounted", where)
	}
	for _, c := range spec.Containers {
		sc := c.SecurityContext
		if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
			sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
			sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") {
			t.Errorf("%s: container %s needs a read-only root, no privilege escalation and every capability dropped", where, c.Name)
		}
		if c.Resources.Limits.Memory().IsZero() {
			t.Errorf("%s: container %s has no memory limit", where, c.Name)
		}
	}
}

func TestManifestsAgreeWithTheServer(t *testing.T) {
	all := manifests(t)
	if t.Failed() {
		t.FailNow()
	}
	img := readImage(t)
	bin := serverBin(t)

	run := all["cloudrun/service.yaml"].(*cloudRunService)
	rs := run.Spec.Template.Spec
	if rs.ContainerConcurrency == nil || *rs.ContainerConcurrency != 1 {
		t.Errorf("cloud run: containerConcurrency must be 1: one session per instance")
	}
	ann := run.Spec.Template.Annotations
	if ann["run.googleapis.com/vpc-access-connector"] == "" || ann["run.googleapis.com/vpc-access-egress"] != "all-traffic" {
		t.Errorf("cloud run: all egress must go through the deny-all VPC connector: %v", ann)
	}
	if len(rs.Containers) != 1 {
		t.Fatalf("cloud run: %d containers", len(rs.Containers))
	}
	checkContainer(t, "cloud run", rs.Containers[0], rs.Volumes, img, bin)

	tmpl := all["kubernetes/agent-sandbox/sandboxtemplate.yaml"].(*extv1beta1.SandboxTemplate)
	spec := tmpl.Spec.PodTemplate.Spec
	checkPodSecurity(t, "sandbox template", spec, img)
	checkContainer(t, "sandbox template", spec.Containers[0], spec.Volumes, img, bin)
	if np := tmpl.Spec.NetworkPolicy; np == nil || len(np.Egress) != 0 {
		t.Errorf("sandbox template: the network policy must list no egress rule (deny all)")
	}
	pool := all["kubernetes/agent-sandbox/sandboxwarmpool.yaml"].(*extv1beta1.SandboxWarmPool)
	if pool.Spec.TemplateRef.Name != tmpl.Name {
		t.Errorf("warm pool refers to template %q, the template is %q", pool.Spec.TemplateRef.Name, tmpl.Name)
	}

	pod := all["kubernetes/plain/pod.yaml"].(*corev1.Pod)
	checkPodSecurity(t, "plain pod", pod.Spec, img)
	checkContainer(t, "plain pod", pod.Spec.Containers[0], pod.Spec.Volumes, img, bin)
	np := all["kubernetes/plain/networkpolicy.yaml"].(*networkingv1.NetworkPolicy)
	if !slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeEgress) || len(np.Spec.Egress) != 0 {
		t.Errorf("plain network policy: must deny all egress")
	}
	for k, v := range np.Spec.PodSelector.MatchLabels {
		if pod.Labels[k] != v {
			t.Errorf("plain network policy selects %s=%s, which the pod does not carry", k, v)
		}
	}
	if len(np.Spec.Ingress) != 1 || len(np.Spec.Ingress[0].Ports) != 1 || np.Spec.Ingress[0].Ports[0].Port.IntValue() != port {
		t.Errorf("plain network policy: ingress must be on port %d only", port)
	}
}
