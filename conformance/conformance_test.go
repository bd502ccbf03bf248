package conformance

import (
	"strings"
	"testing"

	"github.com/adk-codemode/codemode/schema"
)

func TestSpecKeywords(t *testing.T) {
	spec, err := specKeywords()
	if err != nil {
		t.Fatal(err)
	}
	// 2020-12 defines 57 keywords across the seven vocabularies.
	if len(spec) != 57 {
		t.Errorf("meta-schemas define %d keywords, want 57", len(spec))
	}
	for _, k := range []string{"$ref", "unevaluatedProperties", "contentSchema", "dependentRequired", "format"} {
		if _, ok := spec[k]; !ok {
			t.Errorf("meta-schemas lack %q", k)
		}
	}
}

func TestTableCoversSpec(t *testing.T) {
	spec, err := specKeywords()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range check(schema.Keywords(), spec) {
		t.Error(p)
	}
}

func TestSuiteFailsOnRemovedKeyword(t *testing.T) {
	spec, err := specKeywords()
	if err != nil {
		t.Fatal(err)
	}
	for _, removed := range []string{"contains", "$ref", "unevaluatedItems", "title"} {
		var table []schema.Keyword
		for _, k := range schema.Keywords() {
			if k.Name != removed {
				table = append(table, k)
			}
		}
		problems := check(table, spec)
		if len(problems) != 1 || !strings.Contains(problems[0], `"`+removed+`"`) || !strings.Contains(problems[0], "not classified") {
			t.Errorf("without %q: problems = %q, want one naming it as not classified", removed, problems)
		}
	}
}

func TestSuiteFailsOnUnknownKeyword(t *testing.T) {
	spec, err := specKeywords()
	if err != nil {
		t.Fatal(err)
	}
	table := append(schema.Keywords(), schema.Keyword{Name: "additionalItems", Vocabulary: schema.VocabApplicator, Class: schema.Ignored, Note: "draft 2019-09"})
	problems := check(table, spec)
	if len(problems) != 1 || !strings.Contains(problems[0], "do not define") {
		t.Errorf("problems = %q, want one about additionalItems", problems)
	}
	wrong := schema.Keywords()
	for i := range wrong {
		if wrong[i].Name == "format" {
			wrong[i].Vocabulary = schema.VocabValidation
		}
	}
	if problems := check(wrong, spec); len(problems) != 1 || !strings.Contains(problems[0], "format-annotation") {
		t.Errorf("misfiled format: problems = %q", problems)
	}
}

func TestEveryValidationAndMetaDataKeywordRendered(t *testing.T) {
	spec, err := specKeywords()
	if err != nil {
		t.Fatal(err)
	}
	for name, vocab := range spec {
		if vocab != schema.VocabValidation && vocab != schema.VocabMetaData {
			continue
		}
		if k, _ := schema.LookupKeyword(name); k.Class != schema.Rendered {
			t.Errorf("%s keyword %q is %v, want rendered", vocab, name, k.Class)
		}
	}
}
