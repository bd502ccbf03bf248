package wsserve

import (
	"fmt"
	"os"
	"path"
)

// WriteFiles writes a session's files (as [wsproto.DecodeFiles] returns
// them) beneath dir, read-only, and makes the directories it created
// read-only after them. It refuses to replace anything, and to follow a
// symlink out of dir. codemode-sandbox uses it for the files of either
// transport: a WebSocket's files message or the preamble on standard
// input.
func WriteFiles(dir string, files map[string][]byte) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("wsserve: the files directory: %w", err)
	}
	defer func() { _ = root.Close() }()
	made := map[string]bool{}
	for name, data := range files {
		for d := path.Dir(name); d != "." && !made[d]; d = path.Dir(d) {
			made[d] = true
		}
		if err := root.MkdirAll(path.Dir(name), 0o755); err != nil {
			return fmt.Errorf("wsserve: session file %s: %w", name, err)
		}
		f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o444)
		if err != nil {
			return fmt.Errorf("wsserve: session file %s: %w", name, err)
		}
		_, err = f.Write(data)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("wsserve: session file %s: %w", name, err)
		}
	}
	for d := range made {
		if err := root.Chmod(d, 0o555); err != nil {
			return fmt.Errorf("wsserve: session directory %s: %w", d, err)
		}
	}
	return nil
}
