// Package warm keeps sandboxes started ahead of need: a [Pool] is a
// transport.Backend over any other backend that holds a few sessions
// ready, so that opening one hands over a sandbox that is already up. It
// is the one part of running sessions that the contract, package
// transport, leaves out, with its metrics (docs/observability.md).
package warm
