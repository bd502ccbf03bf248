package openapi_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/adk-codemode/codemode/render"
	"github.com/adk-codemode/codemode/toolset/openapi"
	"google.golang.org/genai"
)

const shopDoc = `openapi: 3.1.0
info: {title: Shop, version: "1"}
servers: [{url: "https://shop.example"}]
security: [{key: []}]
paths:
  /items/{id}:
    get:
      operationId: getItem
      summary: Get an item.
      parameters:
        - {name: id, in: path, required: true, schema: {type: integer}}
        - {name: fields, in: query, schema: {type: array, items: {type: string}}, explode: false}
      responses:
        "200":
          description: The item.
          content:
            application/json:
              schema: {type: object, properties: {id: {type: integer}, name: {type: string}}}
components:
  securitySchemes:
    key: {type: apiKey, in: header, name: X-Key}
`

func Example() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Println("server:", r.Method, r.URL.RequestURI(), "key:", r.Header.Get("X-Key"))
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id": 7, "name": "lamp"}`)
	}))
	defer srv.Close()

	ts, err := openapi.New(context.Background(), openapi.Config{
		Spec:    []byte(shopDoc),
		BaseURL: srv.URL,
		Auth:    map[string]openapi.Credential{"key": {APIKey: "host-only"}},
	})
	if err != nil {
		panic(err)
	}
	tools, _ := ts.Tools(nil)
	item := tools[0].(interface {
		Declaration() *genai.FunctionDeclaration
	})

	// What the model sees: a Python stub without the key.
	reg, err := render.NewRegistry([]render.Tool{{Namespace: ts.Name(), Declaration: item.Declaration()}})
	if err != nil {
		panic(err)
	}
	fmt.Print(reg.Catalog(render.Full))

	// What a call does: the host adds the key.
	res, err := ts.Call(context.Background(), "get_item", map[string]any{"id": 7, "fields": []any{"name", "price"}})
	fmt.Println(res, err)
	// Output:
	// # tools.shop
	//
	// from tools.shop import get_item
	//
	// def get_item(*, id: int, fields: list[str] | None = ...) -> dict[str, Any]:
	//     """Get an item.
	//
	//     Args:
	//         id:
	//         fields:
	//
	//     Returns:
	//         id: int
	//         name: str
	//     """
	//     ...
	// server: GET /items/7?fields=name,price key: host-only
	// map[id:7 name:lamp] <nil>
}
