package mqtt_test

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Citations must resolve. Code comments and test names cite MQTT rule ids, which must be in
// docs/mqtt-checklist.md, and sections of docs/ARCHITECTURE.md, which must be headings there; and no
// file may name a path of one machine or the design document outside the repository, which a
// reader of the repository cannot open. A citation that resolves nowhere sends the next reader
// looking for a rule that was never written down.

const (
	checklistFile    = "docs/mqtt-checklist.md"
	architectureFile = "docs/ARCHITECTURE.md"
	// thisFile is not checked: its planted fixtures are bad citations on purpose.
	thisFile = "mqtt/citations_test.go"
)

var (
	// ruleID is a rule id as comments write it (in square brackets) and as test names write it
	// (TestX_MQTT_4_3_3_10).
	ruleID = regexp.MustCompile(`MQTT[-_](\d+)[._](\d+)[._](\d+)[-_](\d+)`)
	// bracketed is anything written in square brackets as a rule id; wellFormed is a real one.
	bracketed  = regexp.MustCompile(`\[MQTT-[^\]\n]*\]`)
	wellFormed = regexp.MustCompile(`^\[MQTT-\d+\.\d+\.\d+-\d+\]$`)
	// idRange is a range of ids in the checklist, such as 3.2.2-1 to 3.2.2-4.
	idRange = regexp.MustCompile("\\[MQTT-(\\d+\\.\\d+\\.\\d+)-(\\d+)\\]`?\\s*(?:–|—|-|to)\\s*`?\\[MQTT-(\\d+\\.\\d+\\.\\d+)-(\\d+)\\]")
	// A section of the architecture document is cited right after the document's name: a quoted
	// heading (after a space or one of "(,:", and an optional "section" or "§"), "section" or "§"
	// then the heading unquoted, or "#" and the heading's anchor.
	quotedSection   = regexp.MustCompile(`^(?:\s+|\s*[(,:]\s*)(?:(?:section|§)\s*)?["“]([^"”]{1,120})["”]`)
	unquotedSection = regexp.MustCompile(`^\s*[(,:]?\s*(?:section|§)\s*(\S.*)$`)
	anchorSection   = regexp.MustCompile(`^#([\w-]+)`)
	// machinePath is an absolute path on one machine; designDoc is the design document's name.
	machinePath = regexp.MustCompile(`(?:^|[^\w.~-])/(?:work|home|Users)/`)
	designDoc   = regexp.MustCompile(`DESIGN\.md`)
	docsFile    = regexp.MustCompile(`\bdocs/[\w./-]+\.md\b`)
	heading     = regexp.MustCompile(`^#{1,6}\s+(.+?)\s*#*\s*$`)
)

func TestCitations(t *testing.T) {
	root := filepath.Join("..")
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil || !strings.Contains(string(mod), "module github.com/oncemq/oncemq\n") {
		t.Fatalf("%s is not the repository root (go.mod: %v)", root, err)
	}
	problems, err := checkCitations(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
}

// TestCitationsCatchPlantedErrors runs the check on a small tree with one of each kind of bad
// citation next to good ones, so that the check itself is shown to fail when it should.
func TestCitationsCatchPlantedErrors(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{
		checklistFile: "# Checklist\n\n**B4** `[MQTT-4.3.3-10]`\n\n**H6** `[MQTT-3.2.2-1]`–`[MQTT-3.2.2-4]` (3.1.1)\n",
		architectureFile: "# Architecture\n\n## Locking\n\ntext\n\n```\n# not a heading\n```\n\n" +
			"## Where the code departs from DESIGN.md\n",
		"a/good.go": "package a\n\n// [MQTT-4.3.3-10] and [MQTT-3.2.2-3], see docs/ARCHITECTURE.md \"Locking\",\n" +
			"// docs/ARCHITECTURE.md (\"Where the code departs from DESIGN.md\"), docs/ARCHITECTURE.md section Locking,\n" +
			"// docs/ARCHITECTURE.md#locking and docs/ARCHITECTURE.md, which has more.\n" +
			"func TestX_MQTT_4_3_3_10() {}\n\nconst f = \"docs/ARCHITECTURE.md\"\n",
		"a/bad.go": "package a\n\n// [MQTT-9.9.9-9]\nfunc TestY_MQTT_4_3_3_99() {}\n\n// [MQTT-4.3.3]\n" +
			"// see docs/ARCHITECTURE.md \"Lockng\"\n// see docs/ARCHITECTURE.md\n// section Nowhere\n" +
			"// as in DESIGN.md section 3\n// from @home/someone/x\n// docs/ARCHITECTURE.md#nowhere\n",
		"README.md":             "Read DESIGN.md §1.\nBuild in /tmp/x, not in @Users/me/x.\n",
		".ci/run":               "cd @work/main\n",
		"b/run.sh":              "echo ok\n",
		"a/testdata/fuzz/x.go":  "package a // @home/x [MQTT-9.9.9-9]\n",
		".git/x.md":             "@home/x\n",
		"a/testdata/fuzz.go":    "package a // @Users/x\n",
		"docs/ARCHITECTURE2.md": "See [mqtt-checklist.md](mqtt-checklist.md) and docs/missing.md.\n",
		"a/notes.txt":           "@home/x is not checked in a .txt file\n",
	}
	// "@" stands for the leading "/" of a machine's path, so that this file names none itself.
	machine := strings.NewReplacer("@", "/")
	for name, text := range files {
		text = machine.Replace(text)
		path := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	problems, err := checkCitations(root)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range problems {
		got = append(got, p[:strings.Index(p, ": ")])
	}
	want := []string{".ci/run:1", "README.md:1", "README.md:2", "a/bad.go:10", "a/bad.go:11",
		"a/bad.go:12", "a/bad.go:3", "a/bad.go:4", "a/bad.go:6", "a/bad.go:7", "a/bad.go:8",
		"a/testdata/fuzz.go:1", "docs/ARCHITECTURE2.md:1"}
	if !slices.Equal(got, want) {
		t.Errorf("problems at %q,\nwant %q; all problems:\n%s", got, want, strings.Join(problems, "\n"))
	}
}

// citationIndex is what citations may refer to.
type citationIndex struct {
	root     string
	ids      map[string]bool // "4.3.3-10"
	headings []string        // of the architecture document
}

// checkCitations walks the repository at root and returns one line per broken citation, as
// "path:line: problem", sorted.
func checkCitations(root string) ([]string, error) {
	ix := citationIndex{root: root}
	var err error
	if ix.ids, err = checklistIDs(filepath.Join(root, checklistFile)); err != nil {
		return nil, err
	}
	if ix.headings, err = markdownHeadings(filepath.Join(root, architectureFile)); err != nil {
		return nil, err
	}
	if len(ix.ids) == 0 || len(ix.headings) == 0 {
		return nil, fmt.Errorf("%s lists no rule id or %s has no heading", checklistFile, architectureFile)
	}
	var problems []string
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			// node_modules: the npm packages the browser test installs, not this repository's text.
			if d.Name() == ".git" || d.Name() == "node_modules" || rel == "testdata/fuzz" || strings.HasSuffix(rel, "/testdata/fuzz") {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !checked(rel) || rel == thisFile {
			return nil
		}
		found, err := ix.checkFile(path, rel)
		problems = append(problems, found...)
		return err
	})
	slices.Sort(problems)
	return problems, err
}

// checked reports whether the file at rel is one whose citations are checked.
func checked(rel string) bool {
	switch filepath.Ext(rel) {
	case ".go", ".md", ".sh":
		return true
	}
	return rel == ".ci/run"
}

// checkFile checks every line of one file.
func (ix *citationIndex) checkFile(path, rel string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	lines := strings.Split(string(data), "\n")
	citesRules := (strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, ".md")) && rel != checklistFile
	var problems []string
	for i, line := range lines {
		var found []string
		if citesRules {
			found = append(found, ix.ruleProblems(line)...)
		}
		next := ""
		if i+1 < len(lines) {
			next = lines[i+1]
		}
		found = append(found, ix.sectionProblems(line, next)...)
		found = append(found, ix.pathProblems(line, rel)...)
		for _, p := range found {
			problems = append(problems, fmt.Sprintf("%s:%d: %s", rel, i+1, p))
		}
	}
	return problems, nil
}

// ruleProblems reports the rule ids of line that the checklist does not list, and bracketed
// citations that are not rule ids at all (a section number such as 4.3.3, or prose).
func (ix *citationIndex) ruleProblems(line string) []string {
	var problems []string
	for _, m := range ruleID.FindAllStringSubmatch(line, -1) {
		id := fmt.Sprintf("%s.%s.%s-%s", m[1], m[2], m[3], m[4])
		if !ix.ids[id] {
			problems = append(problems, fmt.Sprintf("rule id %s is not in %s: add it to its appendix with a paraphrase of the rule, or fix the id", m[0], checklistFile))
		}
	}
	for _, b := range bracketed.FindAllString(line, -1) {
		if !wellFormed.MatchString(b) {
			problems = append(problems, fmt.Sprintf("%s is not a rule id: cite a rule id of %s, or write a section as §x.y.z", b, checklistFile))
		}
	}
	return problems
}

// sectionProblems reports citations of sections of the architecture document that are not its
// headings. A citation may continue on the next line.
func (ix *citationIndex) sectionProblems(line, next string) []string {
	const doc = "ARCHITECTURE.md"
	var problems []string
	for rest := line; ; {
		i := strings.Index(rest, doc)
		if i < 0 {
			return problems
		}
		rest = rest[i+len(doc):]
		after := rest
		if strings.TrimSpace(after) == "" {
			after = " " + strings.TrimLeft(strings.TrimSpace(next), "/#* ")
		}
		if name, ok := ix.citedSection(after); !ok {
			problems = append(problems, fmt.Sprintf("%s cites section %q, which is not a heading of %s", doc, name, architectureFile))
		}
	}
}

// citedSection reads the section cited right after a mention of the architecture document. It
// returns the name and whether it resolves; a mention without a section resolves.
func (ix *citationIndex) citedSection(after string) (string, bool) {
	if m := anchorSection.FindStringSubmatch(after); m != nil {
		for _, h := range ix.headings {
			if slug(h) == m[1] {
				return m[1], true
			}
		}
		return "#" + m[1], false
	}
	if m := quotedSection.FindStringSubmatch(after); m != nil {
		return m[1], slices.Contains(ix.headings, m[1])
	}
	if m := unquotedSection.FindStringSubmatch(after); m != nil {
		for _, h := range ix.headings {
			if strings.HasPrefix(m[1], h) {
				return h, true
			}
		}
		return m[1], false
	}
	return "", true
}

// pathProblems reports absolute paths of one machine, the design document cited outside the
// repository, and documents under docs/ that do not exist.
func (ix *citationIndex) pathProblems(line, rel string) []string {
	var problems []string
	if m := machinePath.FindString(line); m != "" {
		problems = append(problems, fmt.Sprintf("absolute path of a machine (%s...): use a path relative to the repository", strings.TrimLeft(m, " \t\"'`(=:")))
	}
	if rel != architectureFile { // the one document that says where the code departs from the design
		for _, h := range ix.headings {
			line = strings.ReplaceAll(line, strconv.Quote(h), "")
		}
		for _, loc := range designDoc.FindAllStringIndex(line, -1) {
			if !strings.HasSuffix(line[:loc[0]], "docs/") {
				problems = append(problems, fmt.Sprintf("the design document is outside the repository: cite %s instead", architectureFile))
				break
			}
		}
	}
	for _, f := range docsFile.FindAllString(line, -1) {
		if _, err := os.Stat(filepath.Join(ix.root, filepath.FromSlash(f))); errors.Is(err, fs.ErrNotExist) {
			problems = append(problems, fmt.Sprintf("%s does not exist", f))
		}
	}
	return problems
}

// checklistIDs returns every rule id the checklist lists, ranges expanded.
func checklistIDs(path string) (map[string]bool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	text := string(data)
	ids := make(map[string]bool)
	for _, m := range ruleID.FindAllStringSubmatch(text, -1) {
		ids[fmt.Sprintf("%s.%s.%s-%s", m[1], m[2], m[3], m[4])] = true
	}
	for _, m := range idRange.FindAllStringSubmatch(text, -1) {
		from, _ := strconv.Atoi(m[2])
		to, _ := strconv.Atoi(m[4])
		for n := from; m[1] == m[3] && n <= to; n++ {
			ids[fmt.Sprintf("%s-%d", m[1], n)] = true
		}
	}
	return ids, nil
}

// markdownHeadings returns the headings of a markdown file, outside code blocks.
func markdownHeadings(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var headings []string
	fenced := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
			continue
		}
		if m := heading.FindStringSubmatch(line); m != nil && !fenced {
			headings = append(headings, m[1])
		}
	}
	return headings, sc.Err()
}

// slug is the anchor a markdown renderer gives a heading: lower case, spaces to hyphens, other
// punctuation dropped.
func slug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
		}
	}
	return b.String()
}
