package codemode_test

import (
	"context"
	"fmt"

	"google.golang.org/genai"

	"google.golang.org/adk/v2/artifact"

	"github.com/adk-codemode/codemode/plugin/codemode"
)

// A host goes through a session's artifacts and picks out the tool results
// that code saved, reading back which tool produced each one: a block's
// results are in one artifact, a named or large result in one of its own.
func ExampleReadToolResults() {
	ctx := context.Background()
	svc := artifact.InMemoryService()
	save := func(name string, part *genai.Part) {
		_, err := svc.Save(ctx, &artifact.SaveRequest{AppName: "app", UserID: "u", SessionID: "s", FileName: name, Part: part})
		if err != nil {
			panic(err)
		}
	}
	// What a block might leave behind: its tool results, one result the
	// code named, and a workspace file.
	save("codemode-tool-results-call1-1.json", &genai.Part{InlineData: &genai.Blob{
		MIMEType: codemode.ToolResultsMIMEType,
		Data: []byte(`{"results":[` +
			`{"tool":"get_weather","call_id":"codemode-call1-1","result":{"city":"Paris","temp_c":18}},` +
			`{"tool":"get_weather","call_id":"codemode-call1-2","result":{"city":"Oslo","temp_c":4}}]}`),
	}})
	save("forecast.json", &genai.Part{InlineData: &genai.Blob{
		MIMEType: codemode.ToolResultMIMEType,
		Data:     []byte(`{"tool":"get_forecast","call_id":"codemode-call1-3","artifact_name":"forecast","result":{"days":3}}`),
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
		results, err := codemode.ReadToolResults(resp.Part)
		if err != nil {
			panic(err)
		}
		for _, r := range results {
			fmt.Printf("%s: %s returned %s\n", name, r.Tool, r.Result)
		}
	}
	// Output:
	// codemode-tool-results-call1-1.json: get_weather returned {"city":"Paris","temp_c":18}
	// codemode-tool-results-call1-1.json: get_weather returned {"city":"Oslo","temp_c":4}
	// forecast.json: get_forecast returned {"days":3}
	// report.csv: not a tool result
}
