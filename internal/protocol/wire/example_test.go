package wire_test

import (
	"errors"
	"fmt"

	"github.com/adk-codemode/codemode/internal/protocol/wire"
	"github.com/adk-codemode/codemode/transport"
)

func ExampleEncode() {
	line, _ := wire.Encode(&wire.ToolCallFrame{ID: "c1", Block: "b1", Name: "slack.send_message", Args: map[string]any{"channel": "C1"}})
	fmt.Print(string(line))
	// Output:
	// {"kind":"tool_call","id":"c1","block":"b1","name":"slack.send_message","args":{"channel":"C1"}}
}

func ExampleDecode() {
	f, err := wire.Decode([]byte(`{"kind":"done","id":"b1","exit_code":3}`))
	fmt.Printf("%T %v\n", f, err)

	// Keys match exactly: a near miss is refused, not ignored.
	_, err = wire.Decode([]byte(`{"kind":"done","id":"b1","Exit_Code":3}`))
	fmt.Println(errors.Is(err, wire.ErrProtocol), err)

	// A sandbox of another release is named as such.
	_, err = wire.Decode([]byte(`{"kind":"ready","protocol_version":9}`))
	var ve *transport.VersionError
	fmt.Println(errors.As(err, &ve), ve.Sandbox)
	// Output:
	// *wire.DoneFrame <nil>
	// true wire: protocol error: done frame: missing key "exit_code"
	// true 9
}
