package wsproto

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/adk-codemode/codemode/internal/protocol/wire"
)

// preambleMagic opens the files preamble on a byte stream.
const preambleMagic = wire.FilesPreambleMagic

// preambleHeader is the preamble's header: the magic and the message's
// length as a big-endian uint64.
const preambleHeader = len(preambleMagic) + 8

// WriteFilesPreamble writes the files message to a byte stream, ahead of
// the session's frames: "CMFILES1", the message's length as a big-endian
// uint64, then the message of [EncodeFiles]. A server on standard input
// and output (codemode-sandbox --files-over-stdin) reads it with
// [ReadFilesPreamble], so a container attached over its standard streams
// receives the tools package the same way as a WebSocket server does.
func WriteFilesPreamble(w io.Writer, files map[string][]byte, lim FileLimits) error {
	data, err := EncodeFiles(files, lim)
	if err != nil {
		return err
	}
	hdr := make([]byte, preambleHeader, preambleHeader+len(data))
	copy(hdr, preambleMagic)
	binary.BigEndian.PutUint64(hdr[len(preambleMagic):], uint64(len(data)))
	_, err = w.Write(append(hdr, data...))
	return err
}

// ReadFilesPreamble reads the preamble that [WriteFilesPreamble] writes
// and decodes its message with [DecodeFiles] under lim. It reads exactly
// the preamble's bytes, so the frames that follow stay in r; it refuses a
// stream that does not open with the magic, and a length over
// lim.MaxBytes before reading the message.
func ReadFilesPreamble(r io.Reader, lim FileLimits) (map[string][]byte, error) {
	lim.setDefaults()
	hdr := make([]byte, preambleHeader)
	if _, err := io.ReadFull(r, hdr); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("wsproto: the stream ended before the files preamble")
		}
		return nil, fmt.Errorf("wsproto: the files preamble's header: %w", err)
	}
	if string(hdr[:len(preambleMagic)]) != preambleMagic {
		return nil, fmt.Errorf("wsproto: the stream does not open with the files preamble (%q): was the server started with --files-over-stdin by a host that does not send it?", preambleMagic)
	}
	n := binary.BigEndian.Uint64(hdr[len(preambleMagic):])
	if n > uint64(lim.MaxBytes) {
		return nil, fmt.Errorf("wsproto: files message of %d bytes is over the limit of %d", n, lim.MaxBytes)
	}
	data := make([]byte, n)
	if _, err := io.ReadFull(r, data); err != nil {
		return nil, fmt.Errorf("wsproto: the files message ended after %d of %d bytes: %w", len(data), n, err)
	}
	return DecodeFiles(data, lim)
}
