// Package fdcheck finds the file descriptors a test leaves open, for the
// tests of the packages that pass descriptors between the host, the
// supervisor and the worker.
package fdcheck
