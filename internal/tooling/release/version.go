package main

import (
	"fmt"

	"golang.org/x/mod/semver"
)

// checkVersion refuses a version the modules cannot be released at.
func checkVersion(v string) error {
	if v == "" {
		return fmt.Errorf("no version given: run make release VERSION=vMAJOR.MINOR.PATCH, such as VERSION=v0.3.0")
	}
	if !semver.IsValid(v) {
		return fmt.Errorf("version %q is not a semantic version: write it as vMAJOR.MINOR.PATCH, such as v0.3.0 or v1.0.0-rc.1", v)
	}
	if semver.Canonical(v) != v {
		return fmt.Errorf("version %q is not written in full: Go tags a module's version as vMAJOR.MINOR.PATCH with an optional pre-release and no build metadata, such as %s", v, semver.Canonical(v))
	}
	if major := semver.Major(v); major != "v0" && major != "v1" {
		return fmt.Errorf("version %s has major version %s, which Go allows only for a module whose path ends in /%s; these modules' paths (github.com/adk-codemode/codemode and its subdirectories) have no such suffix, so release a v0 or v1 version, or move every module to a path ending in /%s first", v, major, major, major)
	}
	return nil
}
