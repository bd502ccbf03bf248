//go:build !linux

package main

func hideProcess() error { return nil }

func noCoreDumps() error { return nil }
