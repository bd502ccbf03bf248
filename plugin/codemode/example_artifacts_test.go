package codemode_test

import (
	"context"
	"fmt"

	"google.golang.org/genai"

	"google.golang.org/adk/v2/artifact"

	"github.com/adk-codemode/codemode/plugin/codemode"
)

// A host goes through a session's artifacts and picks out the tool results
// that code saved, reading back which tool produced each one.
func ExampleReadToolResult() {
	ctx := context.Background()
	svc := artifact.InMemoryService()
	save := func(name string, part *genai.Part) {
		_, err := svc.Save(ctx, &artifact.SaveRequest{AppName: "app", UserID: "u", SessionID: "s", FileName: name, Part: part})
		if err != nil {
			panic(err)
		}
	}
	// What a block might leave behind: a tool result and a workspace file.
	save("codemode-tool-get_weather-call1-1.json", &genai.Part{InlineData: &genai.Blob{
		MIMEType: codemode.ToolResultMIMEType,
		Data:     []byte(`{"tool":"get_weather","call_id":"codemode-call1-1","result":{"city":"Paris","temp_c":18}}`),
	}})
	save("report.csv", &genai.Part{InlineData: &genai.Blob{MIMEType: "text/csv", Data: []byte("a,b\n")}})

	list, err := svc.List(ctx, &artifact.ListRequest{AppName: "app", UserID: "u", SessionID: "s"})
	if err != nil {
		panic(err)
	}
	for _, name := range list.FileNames {
		resp, err := svc.Load(ctx, &artifact.LoadRequest{AppName: "app", UserID: "u", SessionID: "s", FileName: name})
		if err != nil {
			panic(err)
		}
		if !codemode.IsToolResultArtifact(resp.Part) {
			fmt.Printf("%s: not a tool result\n", name)
			continue
		}
		r, err := codemode.ReadToolResult(resp.Part)
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s: %s returned %s\n", name, r.Tool, r.Result)
	}
	// Output:
	// codemode-tool-get_weather-call1-1.json: get_weather returned {"city":"Paris","temp_c":18}
	// report.csv: not a tool result
}
