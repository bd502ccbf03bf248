// Package unsandboxed runs sandbox code as a plain child process of the
// host, with no isolation at all. It exists for development on machines
// where the namespace jail cannot run, and for comparing against the jail.
//
// It is NOT a sandbox: the code runs as the host's user, sees the host's
// files and network, and a daemonised process it starts may outlive the
// session. Never give it untrusted code. Only the environment is reduced
// to the runner's allowlist and the working directory is a fresh temporary
// directory.
package unsandboxed
