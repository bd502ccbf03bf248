package fdcheck

import (
	"os"
	"testing"
)

func TestAddedFindsALeak(t *testing.T) {
	base := Baseline(t)
	f, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	if got := Added(t, base); len(got) != 1 {
		t.Errorf("one file opened, Added lists %q", got)
	}
	f.Close()
	if got := Added(t, base); len(got) != 0 {
		t.Errorf("the file is closed, Added lists %q", got)
	}
	Check(t, base)
}
