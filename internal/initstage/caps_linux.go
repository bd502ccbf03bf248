//go:build linux && amd64

package initstage

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Securebits (linux/securebits.h).
const (
	secbitNoroot                 = 1 << 0
	secbitNorootLocked           = 1 << 1
	secbitNoSetuidFixup          = 1 << 2
	secbitNoSetuidFixupLocked    = 1 << 3
	secbitKeepCapsLocked         = 1 << 5
	secbitNoCapAmbientRaise      = 1 << 6
	secbitNoCapAmbientRaiseLockd = 1 << 7
)

// dropPrivileges leaves the calling thread (and, where the kernel and
// runtime allow, every thread) with no capabilities, no supplementary
// groups, and the payload's uid and gid. It must run on the locked main
// thread that later forks the payload, because the bounding set, securebits
// and capability sets are per thread and are inherited from the forking
// thread.
//
// Root caller: setresuid from inside-root to PayloadID clears the
// permitted and effective sets of every thread (the kernel's setuid fixup,
// which is therefore left enabled). Rootless: the uid stays 0, so
// SECBIT_NOROOT (exec does not grant root capabilities), an empty bounding
// set and an explicit capset do the work.
func dropPrivileges(c *Config, enf *Enforcement) error {
	for capNr := 0; capNr <= 63; capNr++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(capNr), 0, 0, 0); err != nil && err != unix.EINVAL {
			return stepErr("drop capability bounding set", err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && err != unix.EINVAL {
		return stepErr("clear ambient capabilities", err)
	}
	bits := uintptr(secbitNoroot | secbitNorootLocked | secbitKeepCapsLocked |
		secbitNoCapAmbientRaise | secbitNoCapAmbientRaiseLockd)
	if c.Rootless {
		bits |= secbitNoSetuidFixup | secbitNoSetuidFixupLocked
	}
	enf.Securebits = unix.Prctl(unix.PR_SET_SECUREBITS, bits, 0, 0, 0) == nil

	if !c.Rootless {
		if err := syscall.Setgroups([]int{}); err != nil {
			return stepErr("clear supplementary groups", err)
		}
		if err := syscall.Setresgid(c.PayloadGID, c.PayloadGID, c.PayloadGID); err != nil {
			return stepErr("setresgid", err)
		}
		if err := syscall.Setresuid(c.PayloadUID, c.PayloadUID, c.PayloadUID); err != nil {
			return stepErr("setresuid", err)
		}
	}
	if err := capsetEmpty(); err != nil {
		return stepErr("clear capability sets", err)
	}
	enf.CapsDropped = capsEmpty()
	return nil
}

// templateCaps leaves a rootless template (backend/jail's zygote_linux.go)
// one capability of its own user namespace, CAP_SETFCAP, carried across
// the exec of its interpreter as an ambient capability: the kernel lets a
// nested user namespace map an id onto its parent's uid 0 (the only id a
// rootless jail has) only if its creator had CAP_SETFCAP. Every session
// forked from it drops it with the rest. It replaces dropPrivileges.
func templateCaps(enf *Enforcement) error {
	const keep = unix.CAP_SETFCAP
	for capNr := 0; capNr <= 63; capNr++ {
		if capNr == keep {
			continue
		}
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(capNr), 0, 0, 0); err != nil && err != unix.EINVAL {
			return stepErr("drop capability bounding set", err)
		}
	}
	bits := uintptr(secbitNoroot | secbitNorootLocked | secbitKeepCapsLocked | secbitNoSetuidFixup | secbitNoSetuidFixupLocked)
	enf.Securebits = unix.Prctl(unix.PR_SET_SECUREBITS, bits, 0, 0, 0) == nil
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	data[0].Effective, data[0].Permitted, data[0].Inheritable = 1<<keep, 1<<keep, 1<<keep
	if _, _, errno := syscall.AllThreadsSyscall(unix.SYS_CAPSET,
		uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); errno != 0 {
		if err := unix.Capset(&hdr, &data[0]); err != nil {
			return stepErr("set the template's capabilities", err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_RAISE, keep, 0, 0); err != nil {
		return stepErr("raise the template's ambient capability", err)
	}
	return nil
}

// capsetEmpty empties the permitted, effective and inheritable sets, on all
// threads when the runtime supports it (no cgo), else on this thread.
func capsetEmpty() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	_, _, errno := syscall.AllThreadsSyscall(unix.SYS_CAPSET,
		uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0)
	if errno == 0 {
		return nil
	}
	if errno != syscall.ENOTSUP {
		return errno
	}
	hdr.Version = unix.LINUX_CAPABILITY_VERSION_3
	return unix.Capset(&hdr, &data[0])
}

// capsEmpty reports whether this thread holds no capability in any set.
func capsEmpty() bool {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return false
	}
	for _, d := range data {
		if d.Effective|d.Permitted|d.Inheritable != 0 {
			return false
		}
	}
	for capNr := 0; capNr <= 40; capNr++ {
		if r, err := unix.PrctlRetInt(unix.PR_CAPBSET_READ, uintptr(capNr), 0, 0, 0); err == nil && r != 0 {
			return false
		}
	}
	return true
}
