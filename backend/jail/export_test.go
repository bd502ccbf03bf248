package jail

// ForkingBackend returns a Backend that forks its sessions from a
// template even where CODEMODE_JAIL_START=cold makes starting cold the
// default, for the tests of forked sessions themselves.
func ForkingBackend(cfg Config) *Backend { return &Backend{Config: cfg, forked: true} }
