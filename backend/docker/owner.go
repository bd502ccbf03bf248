package docker

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/moby/moby/client"
)

// thisOwner is the owner label of this process's containers:
// hostname/pid/start, where start is the process's start time from
// /proc (empty where there is none), so that a pid reused by another
// process does not keep a dead owner's containers.
func thisOwner() string {
	host, _ := os.Hostname()
	pid := os.Getpid()
	return host + "/" + strconv.Itoa(pid) + "/" + procStart(pid)
}

// procStart is a process's start time in clock ticks since boot, field 22
// of /proc/PID/stat, or "" if it cannot be read.
func procStart(pid int) string {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	// The command name, field 2, is in parentheses and may hold spaces.
	i := strings.LastIndexByte(string(data), ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 20 {
		return ""
	}
	return f[19]
}

// ownerGone reports whether the owner label names a process on this host
// that no longer runs. Containers of other hosts, and labels it cannot
// read, are left alone.
func ownerGone(label string) bool {
	host, rest, ok := strings.Cut(label, "/")
	if !ok {
		return false
	}
	me, _ := os.Hostname()
	if host != me {
		return false
	}
	pidText, start, _ := strings.Cut(rest, "/")
	pid, err := strconv.Atoi(pidText)
	if err != nil || pid <= 0 {
		return false
	}
	if !processExists(pid) {
		return true
	}
	return start != "" && procStart(pid) != "" && procStart(pid) != start
}

// RemoveOrphans removes the sandbox containers that a host process on this
// machine left behind when it died (found by their labels), and reports how
// many it removed. The first Open calls it.
func (b *Backend) RemoveOrphans(ctx context.Context) (int, error) {
	res, err := b.cli.ContainerList(ctx, client.ContainerListOptions{
		All:     true,
		Filters: make(client.Filters).Add("label", labelSandbox),
	})
	if err != nil {
		return 0, fmt.Errorf("docker: list sandbox containers: %w", err)
	}
	n := 0
	for _, c := range res.Items {
		if !ownerGone(c.Labels[labelOwner]) {
			continue
		}
		if err := removeContainer(ctx, b.cli, c.ID); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}
