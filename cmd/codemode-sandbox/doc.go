// Command codemode-sandbox serves one sandbox session over its standard
// input and output: the frame protocol of package transport, with one
// persistent Python worker. It is the entry point of the sandbox container
// image (images/sandbox), where the container is the isolation boundary:
//
//	docker run -i --rm --network none --read-only --tmpfs /workspace --tmpfs /tmp \
//		--cap-drop ALL --security-opt no-new-privileges codemode-sandbox
//
// It exits when the host sends shutdown or closes standard input, after
// killing every process the session started.
package main
