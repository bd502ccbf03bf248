package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"google.golang.org/genai"

	"github.com/adk-codemode/codemode/render"
	"github.com/adk-codemode/codemode/toolset/openapi"
)

// declarer is a tool that has a function declaration, as ADK's tools do.
type declarer interface {
	Declaration() *genai.FunctionDeclaration
}

// loadInput reads the tools of the one input given: a --decls file or an
// OpenAPI document (--openapi). What the OpenAPI toolset does not cover is
// noted on stderr.
func loadInput(decls, spec string, stderr io.Writer, cmd string) ([]render.Tool, error) {
	switch {
	case decls != "" && spec != "":
		return nil, errors.New("give one input: --decls or --openapi, not both")
	case decls != "":
		return loadDecls(decls)
	case spec != "":
		return loadOpenAPI(spec, stderr, cmd)
	}
	return nil, errors.New("an input is required: --decls FILE or --openapi SPEC")
}

// loadOpenAPI builds the tools of the OpenAPI document in the file spec,
// in the toolset's namespace.
func loadOpenAPI(spec string, stderr io.Writer, cmd string) ([]render.Tool, error) {
	ts, err := openapi.New(context.Background(), openapi.Config{File: spec})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", spec, err)
	}
	for _, u := range ts.Report().Unsupported {
		fmt.Fprintf(stderr, "codemode %s: %s: not covered: %v\n", cmd, spec, u)
	}
	list, err := ts.Tools(nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", spec, err)
	}
	tools := make([]render.Tool, 0, len(list))
	for _, t := range list {
		d, ok := t.(declarer)
		if !ok || d.Declaration() == nil {
			return nil, fmt.Errorf("%s: tool %q has no declaration", spec, t.Name())
		}
		tools = append(tools, render.Tool{Namespace: ts.Name(), Declaration: d.Declaration()})
	}
	return tools, nil
}
