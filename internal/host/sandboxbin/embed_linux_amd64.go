package sandboxbin

import _ "embed"

//go:embed codemode-stage.linux-amd64.gz
var compressed []byte
