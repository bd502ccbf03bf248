package npmtest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/adk-codemode/codemode/internal/testsupport/hostcap"
)

// CacheDir is the directory under the user's cache directory where the
// tests keep what they install: codemode-test/name.
func CacheDir(name string) string {
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	return filepath.Join(cache, "codemode-test", name)
}

// installs holds an *installed for each directory and package@version
// asked for in this process.
var installs sync.Map

type installed struct {
	once sync.Once
	msg  string // what failed, or ""
}

// Package returns the directory where pkg@version is installed under the
// user's cache (codemode-test/NAME@VERSION, NAME the part of pkg after its
// scope), installing it with npm when entry, a file of the install, is
// not there yet.
func Package(tb testing.TB, pkg, version, entry string) string {
	tb.Helper()
	return PackageIn(tb, CacheDir(pkg[strings.LastIndex(pkg, "/")+1:]+"@"+version), pkg, version, entry)
}

// PackageIn is Package installing into dir (npm's --prefix).
func PackageIn(tb testing.TB, dir, pkg, version, entry string) string {
	tb.Helper()
	key := pkg + "@" + version
	v, _ := installs.LoadOrStore(dir+"\x00"+key, &installed{})
	in := v.(*installed)
	in.once.Do(func() { in.msg = install(dir, key, entry) })
	if in.msg != "" {
		hostcap.Missing(tb, hostcap.NPM, key+": "+in.msg+"; install it with\n\tnpm install --prefix "+dir+" "+key)
	}
	return dir
}

// install installs key (package@version) under dir unless entry is there
// already, and says what failed, or "".
func install(dir, key, entry string) string {
	if _, err := exec.LookPath("node"); err != nil {
		return "node is not installed"
	}
	if _, err := os.Stat(filepath.Join(dir, entry)); err == nil {
		return ""
	}
	if _, err := exec.LookPath("npm"); err != nil {
		return "npm is not installed"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "npm", "install", "--no-audit", "--no-fund", "--prefix", dir, key).CombinedOutput()
	if err != nil {
		return "npm install failed: " + err.Error() + ": " + strings.TrimSpace(string(out))
	}
	if _, err := os.Stat(filepath.Join(dir, entry)); err != nil {
		return "npm installed it without " + entry
	}
	return ""
}

// The MCP reference server ("everything") at the version the tests pin.
const (
	EverythingPackage = "@modelcontextprotocol/server-everything"
	EverythingVersion = "2026.8.31"
	EverythingEntry   = "node_modules/@modelcontextprotocol/server-everything/dist/index.js"
)

// Everything returns the path of the MCP reference server's entry point,
// to run with node and the argument stdio, installing it first if needed.
func Everything(tb testing.TB) string {
	tb.Helper()
	return filepath.Join(Package(tb, EverythingPackage, EverythingVersion, EverythingEntry), EverythingEntry)
}
