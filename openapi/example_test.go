package openapi_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/adk-codemode/codemode/openapi"
)

const petsDoc = `openapi: 3.1.0
info: {title: Pets, version: "1"}
security: [{key: []}]
paths:
  /pets:
    get:
      operationId: listPets
      summary: List the pets.
      parameters:
        - {name: limit, in: query, schema: {type: integer, maximum: 100}}
      responses:
        "200":
          description: The pets.
          content:
            application/json:
              schema: {type: array, items: {type: string}}
components:
  securitySchemes:
    key: {type: apiKey, in: header, name: X-Key}
`

// An API without ADK: list the operations as a catalog, then call one.
func Example() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Println("server:", r.Method, r.URL.RequestURI(), "key:", r.Header.Get("X-Key"))
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `["rex", "tom"]`)
	}))
	defer srv.Close()

	api, err := openapi.Load(context.Background(), openapi.Config{
		Spec:    []byte(petsDoc),
		BaseURL: srv.URL,
		Auth:    map[string]openapi.Credential{"key": {APIKey: "host-only"}},
	})
	if err != nil {
		panic(err)
	}
	for _, op := range api.Ops() {
		fmt.Printf("%s.%s: %s (result under %q)\n", api.Name(), op.Name(), op.Description(), op.ResultKey())
	}
	res, err := api.Call(context.Background(), "list_pets", map[string]any{"limit": 2})
	fmt.Println(res, err)
	// Output:
	// pets.list_pets: List the pets. (result under "result")
	// server: GET /pets?limit=2 key: host-only
	// map[result:[rex tom]] <nil>
}
