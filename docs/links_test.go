package docs_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var (
	headingLine = regexp.MustCompile(`^(#{1,6})[ \t]+(.*?)[ \t]*#*[ \t]*$`)
	inlineLink  = regexp.MustCompile(`\[[^\]]*\]\(([^)\s]+)\)`)
	codeSpan    = regexp.MustCompile("`+[^`]*`+")
	linkText    = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
	schemeLink  = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// page is what the link check needs of one markdown file: its headings'
// levels and anchors, and its links with their lines, all outside code blocks.
type page struct {
	file     string
	levels   []int
	anchors  map[string]bool
	links    []pageLink
	listsAll map[string]bool // the .md files it links to, resolved
}

type pageLink struct {
	line   int
	target string
}

// anchor is GitHub's anchor of a heading: the text as rendered (no code or
// emphasis marks, link texts only), lower case, without punctuation other
// than '-' and '_', blanks turned into '-'.
func anchor(heading string) string {
	text := linkText.ReplaceAllString(heading, "$1")
	text = strings.NewReplacer("`", "", "*", "").Replace(text)
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.Is(unicode.Mn, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func readPage(file string) (*page, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	p := &page{file: file, anchors: map[string]bool{}, listsAll: map[string]bool{}}
	seen := map[string]int{}
	fence := ""
	for i, line := range strings.Split(string(data), "\n") {
		if fence != "" {
			if isFenceClose(line, fence) {
				fence = ""
			}
			continue
		}
		if open := fenceOpen.FindStringSubmatch(line); open != nil {
			fence = open[2]
			continue
		}
		if h := headingLine.FindStringSubmatch(line); h != nil {
			a := anchor(h[2])
			if n := seen[a]; n > 0 {
				seen[a]++
				a = fmt.Sprintf("%s-%d", a, n)
			} else {
				seen[a] = 1
			}
			p.anchors[a] = true
			p.levels = append(p.levels, len(h[1]))
		}
		for _, m := range inlineLink.FindAllStringSubmatch(codeSpan.ReplaceAllString(line, "x"), -1) {
			p.links = append(p.links, pageLink{line: i + 1, target: m[1]})
			if path, _, _ := strings.Cut(m[1], "#"); strings.HasSuffix(path, ".md") && !schemeLink.MatchString(path) {
				p.listsAll[filepath.Clean(filepath.Join(filepath.Dir(file), path))] = true
			}
		}
	}
	return p, nil
}

// brokenLinks lists the links of the pages whose file or anchor does not
// exist. Links with a scheme (https:, mailto:) are not followed.
func brokenLinks(pages map[string]*page) []string {
	var broken []string
	for _, p := range pages {
		for _, l := range p.links {
			if schemeLink.MatchString(l.target) {
				continue
			}
			path, frag, _ := strings.Cut(l.target, "#")
			target := p.file
			if path != "" {
				target = filepath.Clean(filepath.Join(filepath.Dir(p.file), path))
				if _, err := os.Stat(target); err != nil {
					broken = append(broken, fmt.Sprintf("%s:%d: %s: no such file", p.file, l.line, l.target))
					continue
				}
			}
			if frag == "" {
				continue
			}
			tp, ok := pages[target]
			if !ok {
				var err error
				if tp, err = readPage(target); err != nil {
					broken = append(broken, fmt.Sprintf("%s:%d: %s: %v", p.file, l.line, l.target, err))
					continue
				}
			}
			if !tp.anchors[frag] {
				broken = append(broken, fmt.Sprintf("%s:%d: %s: no heading with that anchor in %s", p.file, l.line, l.target, target))
			}
		}
	}
	return broken
}

var _ = Describe("The links in the documentation", func() {
	pages := map[string]*page{}
	files, err := documentation()
	for _, f := range files {
		if err != nil {
			break
		}
		var p *page
		if p, err = readPage(f); err == nil {
			pages[filepath.Clean(f)] = p
		}
	}

	It("lead to files and headings that exist", func() {
		Expect(err).NotTo(HaveOccurred())
		Expect(brokenLinks(pages)).To(BeEmpty())
	})

	It("are checked by a checker that tells a broken link from a good one", func() {
		dir := GinkgoT().TempDir()
		write := func(name, text string) string {
			f := filepath.Join(dir, name)
			Expect(os.MkdirAll(filepath.Dir(f), 0o755)).To(Succeed())
			Expect(os.WriteFile(f, []byte(text), 0o644)).To(Succeed())
			return f
		}
		a := write("a.md", "# A\n\n## The `firewall` type works (v1.150)\n\n## Same\n\n## Same\n\n"+
			"[ok](#the-firewall-type-works-v1150) [dup](#same-1) [sub](sub/b.md#metal-stacks-stack) [web](https://x.invalid/#y)\n"+
			"[gone](#nothing) [missing](sub/c.md) [wrong](sub/b.md#same)\n```md\n[in code](#not-checked)\n```\n")
		b := write("sub/b.md", "# B\n\n## Metal-stack's stack\n\n[back](../a.md)\n")
		got := map[string]*page{}
		for _, f := range []string{a, b} {
			p, err := readPage(f)
			Expect(err).NotTo(HaveOccurred())
			got[f] = p
		}
		Expect(brokenLinks(got)).To(ConsistOf(
			ContainSubstring("#nothing: no heading"),
			ContainSubstring("sub/c.md: no such file"),
			ContainSubstring("sub/b.md#same: no heading"),
		))
	})

	It("give every page below docs/ one title, and list it in its folder's README.md", func() {
		Expect(err).NotTo(HaveOccurred())
		var problems []string
		for f, p := range pages {
			if strings.HasPrefix(f, "..") {
				continue
			}
			titles := 0
			for _, l := range p.levels {
				if l == 1 {
					titles++
				}
			}
			if titles != 1 || len(p.levels) == 0 || p.levels[0] != 1 {
				problems = append(problems, fmt.Sprintf("%s: want one # title, first; has %d", f, titles))
			}
			if filepath.Base(f) == "README.md" {
				continue
			}
			index, ok := pages[filepath.Join(filepath.Dir(f), "README.md")]
			if !ok || !index.listsAll[f] {
				problems = append(problems, fmt.Sprintf("%s: not linked from %s", f, filepath.Join(filepath.Dir(f), "README.md")))
			}
		}
		Expect(problems).To(BeEmpty())
	})
})
