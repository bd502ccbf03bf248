package sandboxbin

import _ "embed"

//go:embed codemode-stage.linux-arm64.gz
var compressed []byte
