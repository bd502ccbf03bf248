package docker_test

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/adk-codemode/codemode/backend/docker"
)

// extension is what an image built FROM the sandbox image adds to its
// site-packages without pip: a wheel's contents unpacked (a package and its
// .dist-info with METADATA and RECORD) and a lone module file.
var extension = map[string]string{
	"codemode_extra/__init__.py":               "from codemode_extra.core import answer\n",
	"codemode_extra/core.py":                   "def answer():\n    return 'extended ' + __name__\n",
	"codemode_extra-1.2.3.dist-info/METADATA":  "Metadata-Version: 2.1\nName: codemode-extra\nVersion: 1.2.3\nSummary: a test package\n\n",
	"codemode_extra-1.2.3.dist-info/RECORD":    "codemode_extra/__init__.py,,\ncodemode_extra/core.py,,\ncodemode_extra-1.2.3.dist-info/METADATA,,\ncodemode_extra-1.2.3.dist-info/RECORD,,\n",
	"codemode_extra-1.2.3.dist-info/INSTALLER": "test\n",
	"codemode_lone_module.py":                  "WHERE = __file__\n",
}

// TestExtendedImage builds an image FROM the sandbox image through the
// engine's build endpoint, as images/README.md tells users to, and runs a
// session in it: the added package imports in a block and is in the
// packages the sandbox reports, which the catalog lists.
func TestExtendedImage(t *testing.T) {
	base := engine(t, docker.Config{})
	baseImage := base.Name()[len("docker:"):]
	s := open(t, base)
	site := strings.TrimSpace(ok(t, s, "import site\nprint(site.getsitepackages()[0])"))
	if !strings.HasPrefix(site, "/") {
		t.Fatalf("the sandbox's site-packages: %q", site)
	}
	if _, found := s.Environment().Packages["codemode_extra"]; found {
		t.Fatal("the base image already has codemode_extra")
	}
	_ = s.Close()

	cli, err := client.New(client.FromEnv, client.WithHost(base.Host()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cli.Close() }()
	var suffix [4]byte
	_, _ = rand.Read(suffix[:])
	tag := "codemode-sandbox-extended-test:" + hex.EncodeToString(suffix[:])
	dockerfile := fmt.Sprintf("FROM %s\nCOPY site/ %s/\n", baseImage, site)
	build(t, cli, tag, dockerfile, extension)

	b := engine(t, docker.Config{Image: tag})
	ext := open(t, b)
	out := ok(t, ext, "import codemode_extra, codemode_lone_module\nprint(codemode_extra.answer())\nprint(codemode_lone_module.WHERE)")
	want := "extended codemode_extra.core\n" + site + "/codemode_lone_module.py\n"
	if out != want {
		t.Fatalf("the block printed %q, want %q", out, want)
	}
	got := ext.Environment().Packages["codemode_extra"]
	if got["codemode-extra"] != "1.2.3" || len(got) != 1 {
		t.Fatalf("the sandbox reports codemode_extra as %v, want {codemode-extra: 1.2.3}; all: %v", got, ext.Environment().Packages)
	}
}

// build builds dockerfile with files under site/ in its context as tag,
// and removes the image when the test ends.
func build(t *testing.T, cli *client.Client, tag, dockerfile string, files map[string]string) {
	t.Helper()
	var ctxTar bytes.Buffer
	tw := tar.NewWriter(&ctxTar)
	add := func(name, content string) {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(content)), ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(content)); err != nil {
			t.Fatal(err)
		}
	}
	add("Dockerfile", dockerfile)
	for name, content := range files {
		add("site/"+name, content)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	res, err := cli.ImageBuild(t.Context(), &ctxTar, client.ImageBuildOptions{Tags: []string{tag}, Remove: true, ForceRemove: true, NetworkMode: "none"})
	if err != nil {
		t.Fatalf("build %s: %v", tag, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := cli.ImageRemove(ctx, tag, client.ImageRemoveOptions{Force: true}); err != nil {
			t.Errorf("remove the test image %s: %v", tag, err)
		}
	})
	var log strings.Builder
	dec := json.NewDecoder(io.LimitReader(res.Body, 16<<20))
	for {
		var m struct {
			Stream, Error string
			ErrorDetail   struct{ Message string }
		}
		if err := dec.Decode(&m); err != nil {
			_ = res.Body.Close()
			if !errors.Is(err, io.EOF) {
				t.Fatalf("build %s: read the engine's answer: %v\n%s", tag, err, log.String())
			}
			break
		}
		log.WriteString(m.Stream)
		if m.Error != "" || m.ErrorDetail.Message != "" {
			_ = res.Body.Close()
			t.Fatalf("build %s failed: %s %s\n%s", tag, m.Error, m.ErrorDetail.Message, log.String())
		}
	}
	if _, err := cli.ImageInspect(t.Context(), tag); err != nil {
		t.Fatalf("the engine built no %s: %v\n%s", tag, err, log.String())
	}
}

// TestCPUQuota sets a CPU quota: the engine applies it (read back by
// inspect, reported by Enforced), the container's cgroup holds it, and a
// busy loop in a block is throttled by it (the cgroup's throttled count
// grows; no timing is judged).
func TestCPUQuota(t *testing.T) {
	b := engine(t, docker.Config{CPUs: 0.5})
	e, err := b.Enforced(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if e.NanoCPUs != 500_000_000 {
		t.Fatalf("Enforced reports a CPU quota of %d nano CPUs, want 500000000", e.NanoCPUs)
	}
	s := open(t, b)
	out := ok(t, s, `
import os, time

def read(*paths):
    for p in paths:
        try:
            with open(p) as f:
                return p, f.read()
        except OSError:
            pass
    raise SystemExit("no cgroup CPU files among %s" % (paths,))

if os.path.exists("/sys/fs/cgroup/cpu.max"):  # cgroup v2
    quota, period = read("/sys/fs/cgroup/cpu.max")[1].split()
    stat_path = "/sys/fs/cgroup/cpu.stat"
else:  # cgroup v1
    quota = read("/sys/fs/cgroup/cpu/cpu.cfs_quota_us", "/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us")[1].strip()
    period = read("/sys/fs/cgroup/cpu/cpu.cfs_period_us", "/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us")[1].strip()
    stat_path = read("/sys/fs/cgroup/cpu/cpu.stat", "/sys/fs/cgroup/cpu,cpuacct/cpu.stat")[0]

def throttled():
    with open(stat_path) as f:
        return int(dict(l.split() for l in f)["nr_throttled"])

before = throttled()
n = 0
give_up = time.monotonic() + 30  # a backstop: without a quota, no throttling comes
while throttled() == before and time.monotonic() < give_up:  # busy until the quota throttles it
    for i in range(20000):
        n += i
print(quota, period, before, throttled())
`)
	var quota, period, before, after int64
	if _, err := fmt.Sscan(out, &quota, &period, &before, &after); err != nil {
		t.Fatalf("the block printed %q: %v", out, err)
	}
	if quota*2 != period {
		t.Fatalf("the container's cgroup quota is %d per %d, want half the period", quota, period)
	}
	if after <= before {
		t.Fatalf("the busy loop was not throttled: nr_throttled %d then %d", before, after)
	}
}
