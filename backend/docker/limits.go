package docker

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"
)

// Enforcement is what the engine applied to a sandbox container, read back
// from the engine (container inspect), not taken from the request.
type Enforcement struct {
	Engine, EngineVersion string
	Host                  string // the engine's address
	HostSource            string // where Host came from: Config.Host, DOCKER_HOST, a docker context, the default socket
	Image                 string
	User                  string
	NetworkMode           string // "none": no network interface but loopback
	ReadOnlyRoot          bool
	CapDropAll            bool // no capability kept
	CapAdd                []string
	NoNewPrivileges       bool
	Seccomp               string // "codemode" (the jail's system-call policy, which the backend sends), "default" (the engine's profile) or what SecurityOpt names
	Init                  bool   // an init process reaps and forwards signals
	IpcMode               string // "private"
	PidsLimit             int64  // 0: no bound
	MemoryBytes           int64  // 0: no bound
	MemorySwapBytes       int64  // memory plus swap; equal to MemoryBytes: no swap
	NanoCPUs              int64  // CPU quota in 1e-9 CPUs; 0: none
	Tmpfs                 map[string]string
	AutoRemove            bool
	Privileged            bool
	Runtime               string
	// Binds are the host directories mounted into the container, each as
	// "source:destination:ro" or ":rw": with Config.Egress only the egress
	// proxy's directory, read-only at /run/codemode-egress; else none.
	Binds []string
}

// request is the container the backend creates for one session, with eh's
// directory mounted if eh is not nil.
func (b *Backend) request(args []string, eh *egressHost) client.ContainerCreateOptions {
	cfg := b.cfg
	labels := map[string]string{}
	maps.Copy(labels, cfg.Labels)
	labels[labelSandbox] = "1"
	labels[labelOwner] = thisOwner()
	init := true
	hc := &container.HostConfig{
		NetworkMode:    "none",
		ReadonlyRootfs: true,
		CapDrop:        []string{"ALL"},
		SecurityOpt:    []string{"no-new-privileges"},
		IpcMode:        container.IPCModePrivate,
		AutoRemove:     true,
		Init:           &init,
		Runtime:        cfg.Runtime,
		Tmpfs: map[string]string{
			"/workspace": b.tmpfsOptions(cfg.WorkspaceBytes),
			"/tmp":       b.tmpfsOptions(cfg.TmpBytes),
			"/tools":     b.tmpfsOptions(cfg.ToolsBytes),
		},
	}
	if b.seccomp != "" {
		hc.SecurityOpt = append(hc.SecurityOpt, b.seccomp)
	}
	if cfg.MemoryBytes > 0 {
		hc.Memory, hc.MemorySwap = cfg.MemoryBytes, cfg.MemoryBytes
	}
	if cfg.PidsLimit > 0 {
		p := cfg.PidsLimit
		hc.PidsLimit = &p
	}
	if cfg.CPUs > 0 {
		hc.NanoCPUs = int64(cfg.CPUs * 1e9)
	}
	if eh != nil {
		hc.Mounts = []mount.Mount{{Type: mount.TypeBind, Source: eh.dir, Target: egressMount, ReadOnly: true}}
		args = append(args, "--egress-socket", egressSocket)
	}
	return client.ContainerCreateOptions{
		Name: newName(),
		Config: &container.Config{
			Image:           cfg.Image,
			Cmd:             args,
			User:            cfg.User,
			Env:             []string{"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8", "HOME=/workspace", "TMPDIR=/tmp"},
			AttachStdin:     true,
			AttachStdout:    true,
			AttachStderr:    true,
			OpenStdin:       true,
			StdinOnce:       true,
			NetworkDisabled: true,
			Labels:          labels,
		},
		HostConfig: hc,
	}
}

// tmpfsOptions are a tmpfs mount's options: its size, and an owner that
// lets the sandbox user write to it. Docker takes uid and gid; podman
// refuses them and chowns the mount to the container's user with U.
func (b *Backend) tmpfsOptions(size int64) string {
	opts := "rw,nosuid,nodev,size=" + strconv.FormatInt(size, 10)
	if b.engine.podman {
		return opts + ",U"
	}
	uid, gid, _ := strings.Cut(b.cfg.User, ":")
	if gid == "" {
		gid = uid
	}
	return opts + ",uid=" + uid + ",gid=" + gid
}

// want is the enforcement the backend asks for, with eh's mount.
func (b *Backend) want(eh *egressHost) Enforcement {
	req := b.request(nil, eh)
	hc := req.HostConfig
	e := Enforcement{
		Image: b.cfg.Image, User: b.cfg.User, NetworkMode: "none", ReadOnlyRoot: true, CapDropAll: true,
		NoNewPrivileges: true, Seccomp: seccompName, Init: true, IpcMode: "private",
		MemoryBytes: hc.Memory, MemorySwapBytes: hc.MemorySwap, NanoCPUs: hc.NanoCPUs, AutoRemove: true, Runtime: b.cfg.Runtime,
	}
	if hc.PidsLimit != nil {
		e.PidsLimit = *hc.PidsLimit
	}
	for _, m := range hc.Mounts {
		e.Binds = append(e.Binds, bind(m.Source, m.Target, !m.ReadOnly))
	}
	return e
}

// bind describes a bind mount as Enforcement.Binds has it.
func bind(source, dest string, rw bool) string {
	if rw {
		return source + ":" + dest + ":rw"
	}
	return source + ":" + dest + ":ro"
}

// inspect reads a container's enforcement back from the engine.
func (b *Backend) inspect(ctx context.Context, id string) (Enforcement, error) {
	res, err := b.cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return Enforcement{}, fmt.Errorf("docker: the sandbox container %s vanished before it started: %w", shortID(id), err)
		}
		return Enforcement{}, fmt.Errorf("docker: inspect the sandbox container: %w", err)
	}
	c := res.Container
	if c.HostConfig == nil || c.Config == nil {
		return Enforcement{}, fmt.Errorf("docker: the engine's inspect of container %s has no configuration", shortID(id))
	}
	hc := c.HostConfig
	e := Enforcement{
		Engine: b.engine.name, EngineVersion: b.engine.version, Host: b.cli.DaemonHost(), HostSource: b.ep.source,
		Image:        c.Config.Image,
		User:         c.Config.User,
		NetworkMode:  string(hc.NetworkMode),
		ReadOnlyRoot: hc.ReadonlyRootfs,
		CapAdd:       hc.CapAdd,
		IpcMode:      string(hc.IpcMode),
		MemoryBytes:  hc.Memory, MemorySwapBytes: hc.MemorySwap, NanoCPUs: hc.NanoCPUs,
		Tmpfs:      hc.Tmpfs,
		AutoRemove: hc.AutoRemove,
		Privileged: hc.Privileged,
		Runtime:    hc.Runtime,
		Seccomp:    "default",
		Init:       hc.Init != nil && *hc.Init,
	}
	if hc.PidsLimit != nil {
		e.PidsLimit = *hc.PidsLimit
	}
	e.CapDropAll = dropsAll(hc.CapDrop, hc.CapAdd)
	for _, m := range c.Mounts {
		if m.Type == mount.TypeBind {
			e.Binds = append(e.Binds, bind(m.Source, m.Destination, m.RW))
		}
	}
	slices.Sort(e.Binds)
	for _, o := range hc.SecurityOpt {
		k, v, _ := strings.Cut(o, "=")
		k, _, _ = strings.Cut(k, ":")
		switch k {
		case "no-new-privileges":
			e.NoNewPrivileges = v == "" || v == "true"
		case "seccomp":
			if v != "" {
				e.Seccomp = seccompOf(v)
			}
		}
	}

	return e, nil
}

// check compares what the engine applied with what was asked and names
// every difference.
func (want Enforcement) check(got Enforcement) error {
	var diffs []string
	diff := func(what string, w, g any) {
		if fmt.Sprint(w) != fmt.Sprint(g) {
			diffs = append(diffs, fmt.Sprintf("%s: asked %v, applied %v", what, w, g))
		}
	}
	diff("network mode", want.NetworkMode, got.NetworkMode)
	diff("read-only root", want.ReadOnlyRoot, got.ReadOnlyRoot)
	diff("all capabilities dropped", want.CapDropAll, got.CapDropAll)
	diff("no-new-privileges", want.NoNewPrivileges, got.NoNewPrivileges)
	diff("seccomp", want.Seccomp, got.Seccomp)
	diff("init process", want.Init, got.Init)
	diff("user", want.User, got.User)
	diff("memory bytes", want.MemoryBytes, got.MemoryBytes)
	diff("memory+swap bytes", want.MemorySwapBytes, got.MemorySwapBytes)
	diff("pids limit", want.PidsLimit, got.PidsLimit)
	diff("CPU quota (nano CPUs)", want.NanoCPUs, got.NanoCPUs)
	diff("host directories mounted", want.Binds, got.Binds)
	if !privateIPC(got.IpcMode) {
		diff("IPC namespace", want.IpcMode, got.IpcMode)
	}
	if len(got.CapAdd) > 0 {
		diffs = append(diffs, "capabilities added: "+strings.Join(got.CapAdd, ","))
	}
	if got.Privileged {
		diffs = append(diffs, "the container is privileged")
	}
	for _, m := range []string{"/workspace", "/tmp", "/tools"} {
		if _, ok := got.Tmpfs[m]; !ok {
			diffs = append(diffs, "tmpfs "+m+": not mounted")
		}
	}
	if len(diffs) == 0 {
		return nil
	}
	slices.Sort(diffs)
	return fmt.Errorf("docker: the engine did not apply the sandbox's limits (%s); use an engine that enforces them, or set the limit to what it supports in docker.Config", strings.Join(diffs, "; "))
}

// describeLimits names the limits for an error message.
func (b *Backend) describeLimits() string {
	c := b.cfg
	return fmt.Sprintf("memory %d bytes, pids %d, CPUs %g, tmpfs /workspace %d, /tmp %d, /tools %d bytes, user %s",
		c.MemoryBytes, c.PidsLimit, c.CPUs, c.WorkspaceBytes, c.TmpBytes, c.ToolsBytes, c.User)
}

// Enforced creates a sandbox container without starting it, reads back
// what the engine applied to it, and removes it.
func (b *Backend) Enforced(ctx context.Context) (Enforcement, error) {
	if err := b.checkEgress(); err != nil {
		return Enforcement{}, err
	}
	if err := b.connect(ctx); err != nil {
		return Enforcement{}, err
	}
	var eh *egressHost
	if b.cfg.Egress != nil {
		var err error
		if eh, err = b.startEgress(); err != nil {
			return Enforcement{}, err
		}
		defer func() { _ = eh.stop() }()
	}
	res, err := b.cli.ContainerCreate(ctx, b.request(nil, eh))
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return Enforcement{}, fmt.Errorf("docker: the image %s is not in the engine at %s: build it with `make image` in the codemode repository (images/README.md), or set Config.Image: %w", b.cfg.Image, b.cli.DaemonHost(), err)
		}
		return Enforcement{}, fmt.Errorf("docker: the engine refused the sandbox container (its limits: %s): %w", b.describeLimits(), err)
	}
	defer func() { _ = removeContainer(context.WithoutCancel(ctx), b.cli, res.ID) }()
	return b.inspect(ctx, res.ID)
}

// defaultCaps are the capabilities an engine grants a container by default
// (Docker's and podman's set).
var defaultCaps = []string{"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
	"NET_BIND_SERVICE", "NET_RAW", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"}

// dropsAll reports whether a container keeps no capability: it drops ALL,
// or (as podman reports CapDrop ALL) every default one, and adds none.
func dropsAll(drop, add []string) bool {
	if len(add) > 0 {
		return false
	}
	dropped := map[string]bool{}
	for _, d := range drop {
		d = strings.TrimPrefix(strings.ToUpper(d), "CAP_")
		if d == "ALL" {
			return true
		}
		dropped[d] = true
	}
	for _, c := range defaultCaps {
		if !dropped[c] {
			return false
		}
	}
	return true
}

// privateIPC reports whether an IPC mode is a namespace of the container's
// own: "private", or "shareable", which podman reports for a private one
// (others may join it, none is joined).
func privateIPC(mode string) bool {
	return mode == string(container.IPCModePrivate) || mode == string(container.IPCModeShareable)
}
