package render

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/template"
	"unicode/utf8"
)

// The files of the tools package that serve search and describe.
const (
	// DiscoveryFile is the module defining search and describe.
	DiscoveryFile = "tools/_discovery.py"
	// DiscoveryIndex holds the search index: every tool's path, raw name,
	// import line, one-line summary and where its description lies in
	// DiscoveryDocs, and the BM25 weight of every term in every tool.
	DiscoveryIndex = "tools/_discovery_index.json"
	// DiscoveryDocs holds every tool's signature and docstring: it is the
	// full catalog. describe reads only the tool's slice of it.
	DiscoveryDocs = "tools/_discovery_docs.txt"
)

// Bounds the discovery module holds its files to. The host writes both
// files, but code in the sandbox may replace them, so the module reads no
// more than these.
const (
	// maxIndexBytes caps the index file read by search.
	maxIndexBytes = 64 << 20
	// maxDescribeBytes caps one tool's text read by describe.
	maxDescribeBytes = 1 << 20
	// maxSearchLimit caps the limit argument of search.
	maxSearchLimit = 100
	// maxQueryRunes caps the query of search.
	maxQueryRunes = 1000
)

// The fields a tool's search terms come from.
const (
	fieldName = iota
	fieldNamespace
	fieldParameter
	fieldDescription
	numFields
)

// fieldWeights weighs a word by its field: a word of the tool's name counts
// three times as much as a word of its description, once each field is
// normalised for its length.
var fieldWeights = [numFields]float64{fieldName: 3, fieldNamespace: 2, fieldParameter: 1, fieldDescription: 1}

// BM25's parameters: term-frequency saturation and length normalisation.
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// weightScale turns a BM25 score into the integer the index stores, so the
// index is byte-stable and Python sums integers.
const weightScale = 1000

// maxIndexedDescription caps the description text indexed per tool, in
// bytes.
const maxIndexedDescription = 8000

// stopwords are left out of the index and of queries: words that say
// nothing about which tool is meant.
var stopwords = []string{
	"a", "an", "and", "any", "are", "as", "at", "be", "by", "can", "for", "from",
	"has", "have", "how", "i", "if", "in", "into", "is", "it", "its", "me", "my",
	"of", "on", "or", "that", "the", "their", "this", "to", "was", "what", "when",
	"which", "will", "with", "you", "your",
}

var stopwordSet = func() map[string]bool {
	m := make(map[string]bool, len(stopwords))
	for _, w := range stopwords {
		m[w] = true
	}
	return m
}()

// maxStopword is the length of the longest stopword.
var maxStopword = func() int {
	n := 0
	for _, w := range stopwords {
		n = max(n, len(w))
	}
	return n
}()

// searchTerms splits text into search terms, the way the discovery module
// splits a query: a lower-case letter followed by an upper-case one starts
// a new word, runs of ASCII letters and digits are words, words are
// lower-cased, stopwords and one-letter words are dropped, and plurals are
// folded (stem).
func searchTerms(text string, out []string) []string {
	// Lower-case the text once, not word by word: ASCII folding keeps every
	// byte offset, and a word then is a slice of the folded text.
	folded := lower(text)
	start := -1
	for i := 0; i <= len(text); i++ {
		alnum := false
		var c byte
		if i < len(text) {
			c = text[i]
			alnum = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		}
		if start >= 0 && (!alnum || c >= 'A' && c <= 'Z' && text[i-1] >= 'a' && text[i-1] <= 'z') {
			if w := folded[start:i]; len(w) > 1 && !isStopword(w) {
				out = append(out, stem(w))
			}
			start = -1
		}
		if alnum && start < 0 {
			start = i
		}
	}
	return out
}

// isStopword reports whether w, lower-case, is one of stopwords.
func isStopword(w string) bool {
	return len(w) <= maxStopword && stopwordSet[w]
}

// stem folds the common English plural endings: "repositories" to
// "repository", "addresses" to "address", "issues" to "issue". The
// discovery module applies the same rules to a query.
func stem(w string) string {
	switch {
	case len(w) > 4 && strings.HasSuffix(w, "ies"):
		return w[:len(w)-3] + "y"
	case len(w) > 4 && strings.HasSuffix(w, "sses"):
		return w[:len(w)-2]
	case len(w) > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") && !strings.HasSuffix(w, "us") && !strings.HasSuffix(w, "is"):
		return w[:len(w)-1]
	}
	return w
}

// Discovery returns the module that search and describe are imported
// from: "tools", unless a top-level tool or a namespace takes one of those
// names (GitHub's API has a search namespace, for example); then
// "tools._discovery", which no tool's name can become.
func (r *Registry) Discovery() string {
	for _, e := range r.entries {
		name := e.Package
		if name == "" {
			name = e.Attr
		}
		if name == "search" || name == "describe" {
			return "tools._discovery"
		}
	}
	return "tools"
}

// importLine is the line that imports the tool of e.
func importLine(e Entry) string {
	module := "tools"
	if e.Package != "" {
		module += "." + e.Package
	}
	return "from " + module + " import " + e.Attr
}

// discoveryFiles returns the discovery module, its index and its
// descriptions.
func (r *Registry) discoveryFiles() []File {
	summaries := r.plainSummaries()
	// The descriptions file is the full catalog, which the block has
	// rendered already; each tool's signature and docstring is a slice of it.
	full := r.catalog(Full)
	counts, lengths := r.countTerms()
	index := weighTerms(counts, lengths)
	return []File{
		{Path: DiscoveryFile, Content: discoveryModule},
		{Path: DiscoveryDocs, Content: full.text},
		{Path: DiscoveryIndex, Content: r.indexJSON(summaries, full.spans, index)},
	}
}

// countTerms counts the search terms of every tool field by field. It
// returns, for each tool, its terms sorted with their counts in each field,
// and the number of words in each field. The fields are weighed and
// length-normalised each on its own (BM25F), so a long description does
// not drown a name that says exactly what was asked.
func (r *Registry) countTerms() ([][]termCount, [][numFields]int) {
	counts := make([][]termCount, len(r.entries))
	lengths := make([][numFields]int, len(r.entries))
	parallel(len(r.entries), func(i int) {
		sc := scratchPool.Get().(*indexScratch)
		defer scratchPool.Put(sc)
		lengths[i] = sc.gather(r.entries[i], r.params[i])
		counts[i] = sc.termCounts()
	})
	return counts, lengths
}

// gather collects the words of the tool of e, each with its field: its
// Python and raw names, its namespace, its parameters' raw names and the
// first maxIndexedDescription bytes of its description. It returns the
// number of words in each field.
func (sc *indexScratch) gather(e Entry, params []param) [numFields]int {
	sc.words, sc.fields, sc.lengths = sc.words[:0], sc.fields[:0], [numFields]int{}
	desc := e.Declaration.Description
	if len(desc) > maxIndexedDescription {
		desc = desc[:maxIndexedDescription]
	}
	sc.add(e.Attr, fieldName)
	if e.Name != e.Attr {
		sc.add(e.Name, fieldName)
	}
	sc.add(e.Namespace, fieldNamespace)
	for _, p := range params {
		sc.add(p.raw, fieldParameter)
	}
	sc.add(desc, fieldDescription)
	return sc.lengths
}

// add appends the search terms of text, found in field.
func (sc *indexScratch) add(text string, field int) {
	n := len(sc.words)
	sc.words = searchTerms(text, sc.words)
	sc.fields = append(sc.fields, fieldSpan{end: len(sc.words), field: field})
	sc.lengths[field] += len(sc.words) - n
}

// termCounts turns the gathered words into counts: it tags each word with
// its field, sorts them by term, and makes each run of one term a
// termCount.
func (sc *indexScratch) termCounts() []termCount {
	words := sc.words
	tagged := slices.Grow(sc.tagged[:0], len(words))[:len(words)]
	sc.tagged = tagged
	k := 0
	for _, f := range sc.fields {
		for ; k < f.end; k++ {
			tagged[k] = taggedTerm{term: words[k], field: f.field}
		}
	}
	slices.SortFunc(tagged, func(a, b taggedTerm) int { return strings.Compare(a.term, b.term) })
	unique := 0
	for k := range tagged {
		if k == 0 || tagged[k].term != tagged[k-1].term {
			unique++
		}
	}
	c := make([]termCount, 0, unique)
	for _, t := range tagged {
		if n := len(c); n > 0 && c[n-1].term == t.term {
			c[n-1].counts[t.field]++
			continue
		}
		tc := termCount{term: t.term}
		tc.counts[t.field] = 1
		c = append(c, tc)
	}
	return c
}

// searchIndex is what search ranks tools by: the sorted vocabulary and
// each term's posting list of (tool, weight) pairs.
type searchIndex struct {
	terms []string
	// postings holds the posting lists of all terms in one slice: term k's
	// tool numbers and weights alternate in postings[start[k]:start[k+1]].
	postings []int
	start    []int
}

// weighTerms builds the search index from every tool's term counts: it
// numbers the terms in sorted order, counts the tools each appears in, and
// weighs each (term, tool) pair.
func weighTerms(counts [][]termCount, lengths [][numFields]int) searchIndex {
	terms, df := numberTerms(counts)
	start := postingStarts(df)
	return searchIndex{terms: terms, postings: weighPairs(counts, lengths, df, start), start: start}
}

// numberTerms sets the id of every termCount to its term's number in the
// sorted vocabulary, and returns that vocabulary and the number of tools
// each term appears in. Each term first takes its number in order of
// appearance, then its sorted number: the vocabulary is sorted once, not
// kept sorted.
func numberTerms(counts [][]termCount) (terms []string, df []int) {
	ids := map[string]int{}
	for _, c := range counts {
		for k, tc := range c {
			id, ok := ids[tc.term]
			if !ok {
				id = len(terms)
				ids[tc.term] = id
				terms = append(terms, tc.term)
			}
			c[k].id = id
		}
	}
	sortedID, terms := sortTerms(terms)
	df = make([]int, len(terms))
	for _, c := range counts {
		for k := range c {
			id := sortedID[c[k].id]
			df[id]++
			c[k].id = id
		}
	}
	return terms, df
}

// sortTerms sorts terms, numbered in order of appearance, and returns the
// sorted number of each term's first number along with the sorted terms.
func sortTerms(terms []string) (sortedID []int, sorted []string) {
	order := make([]int, len(terms)) // sorted number -> first number
	for k := range order {
		order[k] = k
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(terms[a], terms[b]) })
	sortedID = make([]int, len(terms)) // first number -> sorted number
	sorted = make([]string, len(terms))
	for k, first := range order {
		sortedID[first] = k
		sorted[k] = terms[first]
	}
	return sortedID, sorted
}

// postingStarts returns where each term's posting list starts in the
// shared slice, given the number of tools each term appears in, and, last,
// the length of the slice.
func postingStarts(df []int) []int {
	start := make([]int, len(df)+1)
	for k, d := range df {
		start[k+1] = start[k] + 2*d
	}
	return start
}

// weighPairs returns the posting lists: every (term, tool) pair at its
// term's place, tools in order, each pair a tool number and its BM25F
// weight scaled to an integer of at least 1.
func weighPairs(counts [][]termCount, lengths [][numFields]int, df, start []int) []int {
	n := float64(len(counts))
	idf := make([]float64, len(df))
	for k, d := range df {
		idf[k] = math.Log(1 + (n-float64(d)+0.5)/(float64(d)+0.5))
	}
	avg := averageLengths(lengths)
	flat := make([]int, start[len(df)])
	fill := slices.Clone(start[:len(df)])
	for i, c := range counts {
		var norm [numFields]float64
		for f := range numFields {
			norm[f] = 1 - bm25B + bm25B*float64(lengths[i][f])/avg[f]
		}
		for _, tc := range c {
			w := bm25Weight(tc.counts, &norm, idf[tc.id])
			j := fill[tc.id]
			flat[j], flat[j+1] = i, max(1, int(math.Round(w*weightScale)))
			fill[tc.id] = j + 2
		}
	}
	return flat
}

// averageLengths returns the mean number of words in each field over all
// tools, or 1 for a field no tool has a word in.
func averageLengths(lengths [][numFields]int) [numFields]float64 {
	var total [numFields]int
	for _, l := range lengths {
		for f := range numFields {
			total[f] += l[f]
		}
	}
	n := float64(len(lengths))
	var avg [numFields]float64
	for f := range numFields {
		avg[f] = 1
		if len(lengths) > 0 && total[f] > 0 {
			avg[f] = float64(total[f]) / n
		}
	}
	return avg
}

// bm25Weight is the BM25F weight of a term in a tool, given the term's
// counts in each field, the tool's length normalisation of each field and
// the term's inverse document frequency.
func bm25Weight(counts [numFields]int32, norm *[numFields]float64, idf float64) float64 {
	tf := 0.0
	for f := range numFields {
		tf += fieldWeights[f] * float64(counts[f]) / norm[f]
	}
	return idf * tf * (bm25K1 + 1) / (tf + bm25K1)
}

// indexJSON writes the search index as the discovery module reads it: the
// stopwords; every tool's path, raw name, import line, summary and the
// span of its description in DiscoveryDocs; and every term's posting list.
func (r *Registry) indexJSON(summaries []string, spans [][2]int, index searchIndex) string {
	var sb strings.Builder
	sb.Grow(r.indexSize(summaries, index))
	sb.WriteString(`{"format":1,"stopwords":`)
	writeJSON(&sb, stopwords)
	sb.WriteString(",\n\"tools\":[")
	r.writeIndexTools(&sb, summaries, spans)
	sb.WriteString("],\n\"terms\":{")
	index.writeTerms(&sb)
	sb.WriteString("}}\n")
	return sb.String()
}

// indexSize estimates the length of the index in bytes, so that it is
// written into one allocation: each tool's strings and numbers, each term,
// and about four bytes for a tool number or a weight.
func (r *Registry) indexSize(summaries []string, index searchIndex) int {
	size := 256 + 4*len(index.postings)
	for i, e := range r.entries {
		size += 2*len(e.Path) + 2*len(e.Name) + 10 + len(e.Package) + len(summaries[i]) + 32
	}
	for _, t := range index.terms {
		size += len(t) + 8
	}
	return size
}

// writeIndexTools writes the index's list of tools, one line each.
func (r *Registry) writeIndexTools(sb *strings.Builder, summaries []string, spans [][2]int) {
	num := make([]byte, 0, 64)
	for i, e := range r.entries {
		if i > 0 {
			sb.WriteString(",")
		}
		sb.WriteString("\n")
		sb.WriteByte('[')
		for _, str := range [4]string{e.Path, e.Name, importLine(e), summaries[i]} {
			writeJSONString(sb, str)
			sb.WriteByte(',')
		}
		num = strconv.AppendInt(num[:0], int64(spans[i][0]), 10)
		num = append(num, ',')
		num = strconv.AppendInt(num, int64(spans[i][1]), 10)
		num = append(num, ']')
		sb.Write(num)
	}
}

// writeTerms writes the index's map of terms to posting lists, one line
// each.
func (index searchIndex) writeTerms(sb *strings.Builder) {
	var num []byte
	for k, t := range index.terms {
		if k > 0 {
			sb.WriteString(",")
		}
		sb.WriteString("\n")
		writeJSONString(sb, t)
		num = append(num[:0], ":["...)
		for j, v := range index.postings[index.start[k]:index.start[k+1]] {
			if j > 0 {
				num = append(num, ',')
			}
			num = strconv.AppendInt(num, int64(v), 10)
		}
		num = append(num, ']')
		sb.Write(num)
	}
}

// termCount is a term of a tool with its counts.
type termCount struct {
	term   string
	counts [numFields]int32 // occurrences in each field
	id     int              // the term's number in the sorted vocabulary
}

// indexScratch holds the slices one tool's terms are gathered in, kept
// across tools, and the number of words gathered in each field.
type indexScratch struct {
	words   []string
	fields  []fieldSpan
	tagged  []taggedTerm
	lengths [numFields]int
}

var scratchPool = sync.Pool{New: func() any { return new(indexScratch) }}

// taggedTerm is one occurrence of a term in a field of a tool.
type taggedTerm struct {
	term  string
	field int
}

// fieldSpan says that a tool's words up to end come from field.
type fieldSpan struct {
	end, field int
}

// writeJSONString writes s as a JSON string: quotes, backslashes and
// control characters escaped, invalid UTF-8 replaced by U+FFFD.
func writeJSONString(sb *strings.Builder, s string) {
	const hex = "0123456789abcdef"
	sb.WriteByte('"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				sb.WriteByte('\\')
				sb.WriteByte(c)
			case c < 0x20:
				sb.WriteString(`\u00`)
				sb.WriteByte(hex[c>>4])
				sb.WriteByte(hex[c&0xf])
			default:
				sb.WriteByte(c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			sb.WriteString(`\ufffd`)
		} else {
			sb.WriteString(s[i : i+size])
		}
		i += size
	}
	sb.WriteByte('"')
}

func writeJSON(sb *strings.Builder, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // strings, numbers and lists of them
	}
	sb.Write(b)
}

// discoveryModule is the Python source of search and describe.
var discoveryModule = func() string {
	t := template.Must(template.New("discovery.py.tmpl").Delims("<<", ">>").ParseFS(templateFS, "templates/discovery.py.tmpl"))
	return execute(t, map[string]any{
		"Header":           strings.TrimSuffix(header, "\n"),
		"IndexFile":        strRepr(strings.TrimPrefix(DiscoveryIndex, "tools/")),
		"DocsFile":         strRepr(strings.TrimPrefix(DiscoveryDocs, "tools/")),
		"MaxIndexBytes":    maxIndexBytes,
		"MaxDescribeBytes": maxDescribeBytes,
		"MaxLimit":         maxSearchLimit,
		"MaxQuery":         maxQueryRunes,
	}) + "\n"
}()
