package conformance

import (
	"fmt"
	"sort"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/adk-codemode/codemode/schema"
)

// metaSchemaBase is the URL prefix of the 2020-12 vocabulary meta-schemas.
const metaSchemaBase = "https://json-schema.org/draft/2020-12/meta/"

// specKeywords returns every keyword of the seven 2020-12 vocabularies,
// mapped to its vocabulary, read from the meta-schemas bundled with the
// jsonschema library.
func specKeywords() (map[string]string, error) {
	c := jsonschema.NewCompiler()
	out := map[string]string{}
	for _, vocab := range schema.Vocabularies {
		sch, err := c.Compile(metaSchemaBase + vocab)
		if err != nil {
			return nil, fmt.Errorf("conformance: meta-schema %s: %w", vocab, err)
		}
		if len(sch.Properties) == 0 {
			return nil, fmt.Errorf("conformance: meta-schema %s lists no keywords", vocab)
		}
		for k := range sch.Properties {
			out[k] = vocab
		}
	}
	return out, nil
}

// check compares a keyword table with the specification's keywords and
// returns one problem per mismatch, sorted.
func check(table []schema.Keyword, spec map[string]string) []string {
	var problems []string
	inSpecVocab := map[string]bool{}
	for _, v := range schema.Vocabularies {
		inSpecVocab[v] = true
	}
	rows := map[string]schema.Keyword{}
	for _, k := range table {
		if prev, dup := rows[k.Name]; dup {
			problems = append(problems, fmt.Sprintf("keyword %q has two rows (%s, %s)", k.Name, prev.Vocabulary, k.Vocabulary))
		}
		rows[k.Name] = k
		if k.Class != schema.Rendered && k.Class != schema.Structural && k.Class != schema.Ignored {
			problems = append(problems, fmt.Sprintf("keyword %q has no class", k.Name))
		}
		if k.Note == "" {
			problems = append(problems, fmt.Sprintf("keyword %q has no stated reason", k.Name))
		}
		if !inSpecVocab[k.Vocabulary] {
			continue
		}
		vocab, ok := spec[k.Name]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("table names %q in vocabulary %s, but the 2020-12 meta-schemas do not define it", k.Name, k.Vocabulary))
		case vocab != k.Vocabulary:
			problems = append(problems, fmt.Sprintf("table files %q under %s, but the meta-schemas put it in %s", k.Name, k.Vocabulary, vocab))
		}
	}
	for name, vocab := range spec {
		if _, ok := rows[name]; !ok {
			problems = append(problems, fmt.Sprintf("keyword %q of vocabulary %s is not classified", name, vocab))
		}
	}
	sort.Strings(problems)
	return problems
}
