package jail

import (
	"strings"
	"testing"
)

func TestErrUnsupportedNamesAlternatives(t *testing.T) {
	msg := ErrUnsupported.Error()
	// It names only alternatives that exist.
	for _, want := range []string{"namespaces", "Linux host", "unsandboxed"} {
		if !strings.Contains(msg, want) {
			t.Errorf("ErrUnsupported %q does not mention %q", msg, want)
		}
	}
}

func TestDefaults(t *testing.T) {
	c := Config{}.withDefaults()
	if c.MemoryBytes != 1<<30 || c.AddressSpaceBytes != 2<<30 || c.Processes != 256 || c.WorkspaceBytes != 1<<30 ||
		c.TmpBytes != 256<<20 || c.OpenFiles != 1024 || c.FileSizeBytes != c.WorkspaceBytes ||
		c.CPUSeconds != DefaultCPUSeconds || c.SetupHostID != 65534 || c.PayloadHostID != 100000 {
		t.Fatalf("defaults: %+v", c)
	}
	if c := (Config{MemoryBytes: 128 << 20}).withDefaults(); c.AddressSpaceBytes != 128<<20+1<<30 {
		t.Errorf("AS for 128 MiB = %d", c.AddressSpaceBytes)
	}
	if c := (Config{AddressSpaceBytes: -1}).withDefaults(); c.AddressSpaceBytes != -1 {
		t.Errorf("AS -1 not kept: %d", c.AddressSpaceBytes)
	}
}
