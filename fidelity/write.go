package fidelity

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

func (t Totals) String() string {
	return fmt.Sprintf("%d carried, %d consumed, %d dropped, %d lost", t.Carried, t.Consumed, t.Dropped, t.Lost)
}

// WriteText writes r as plain text: per tool its totals and one line per
// finding, then the overall totals and every silent loss.
func (r *Report) WriteText(w io.Writer) error {
	b := bufio.NewWriter(w)
	for _, t := range r.Tools {
		fmt.Fprintf(b, "%s: %s\n", t.Name, t.Totals)
		for _, f := range t.Findings {
			fmt.Fprintf(b, "  %-8s %s %s: %s\n", f.Outcome, f.Position(), f.Keyword, f.Reason)
		}
	}
	fmt.Fprintf(b, "total: %d tools, %s\n", len(r.Tools), r.Totals)
	r.writeVerdict(b, "")
	return b.Flush()
}

func (r *Report) writeVerdict(b *bufio.Writer, bullet string) {
	lost := r.Lost()
	if len(lost) == 0 {
		fmt.Fprintln(b, "nothing lost silently")
		return
	}
	fmt.Fprintf(b, "lost silently: %d\n", len(lost))
	for _, l := range lost {
		fmt.Fprintf(b, "%s  %s %s %s: %s\n", bullet, l.Tool, l.Position(), l.Keyword, l.Reason)
	}
}

// WriteMarkdown writes r as a Markdown document: a summary table, then a
// section per tool with a table of its findings.
func (r *Report) WriteMarkdown(w io.Writer) error {
	b := bufio.NewWriter(w)
	fmt.Fprintf(b, "# Schema fidelity\n\n")
	fmt.Fprintf(b, "%d tools: %s.\n\n", len(r.Tools), r.Totals)
	lost := r.Lost()
	if len(lost) == 0 {
		fmt.Fprintf(b, "Nothing was lost silently.\n\n")
	} else {
		fmt.Fprintf(b, "Lost silently:\n\n")
		for _, l := range lost {
			fmt.Fprintf(b, "- `%s` `%s` `%s`: %s\n", cell(l.Tool), cell(l.Position()), cell(l.Keyword), cell(l.Reason))
		}
		fmt.Fprintln(b)
	}
	fmt.Fprintf(b, "| tool | carried | consumed | dropped | lost |\n|---|---:|---:|---:|---:|\n")
	for _, t := range r.Tools {
		fmt.Fprintf(b, "| `%s` | %d | %d | %d | %d |\n", cell(t.Name), t.Totals.Carried, t.Totals.Consumed, t.Totals.Dropped, t.Totals.Lost)
	}
	for _, t := range r.Tools {
		fmt.Fprintf(b, "\n## %s\n\n", cell(t.Name))
		if len(t.Findings) == 0 {
			fmt.Fprintf(b, "No keywords.\n")
			continue
		}
		fmt.Fprintf(b, "| position | keyword | outcome | reason |\n|---|---|---|---|\n")
		for _, f := range t.Findings {
			fmt.Fprintf(b, "| `%s` | `%s` | %s | %s |\n", cell(f.Position()), cell(f.Keyword), f.Outcome, cell(f.Reason))
		}
	}
	return b.Flush()
}

// cell makes s safe inside a Markdown table cell and a code span.
func cell(s string) string {
	s = strings.NewReplacer("|", `\|`, "`", "'", "\n", " ", "\r", " ").Replace(s)
	return s
}

// WriteJSON writes r as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(data, '\n'))
	return err
}
