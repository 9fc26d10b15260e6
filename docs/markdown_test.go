package docs_test

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// A marker says what an example in the documentation is meant to show, on
// the last non-blank line before its code block:
//
//	<!-- example: error "expected message" -->    the example is refused with this message
//	<!-- example: not-built "expected message" --> it shows a feature this build does not have; refused today
//	<!-- example: skip "why" -->                  not checked (say why)
//
// An error or not-built marker may give several quoted texts; the refusal
// must contain each.
//
// An unmarked yaml or json block that holds an agent config, a firewall or acl
// providerConfig or a ClusterwideNetworkPolicy must be valid.
type marker struct {
	kind     string   // markerError, markerNotBuilt or markerSkip
	messages []string // parts of the refusal (optional for not-built), or why it is skipped
	line     int
}

const (
	markerError    = "error"
	markerNotBuilt = "not-built"
	markerSkip     = "skip"
)

// block is one fenced code block of a markdown file.
type block struct {
	file   string
	line   int // of the opening fence, counting from 1
	lang   string
	text   string
	marker *marker
}

func (b *block) String() string { return fmt.Sprintf("%s:%d", b.file, b.line) }

var (
	fenceOpen   = regexp.MustCompile("^( *)(```+|~~~+)[ \t]*([^ \t`]*)")
	quoted      = `"(?:[^"\\]|\\.)*"`
	markerLine  = regexp.MustCompile(`^\s*<!--\s*example:\s*([a-z-]+)((?:\s+` + quoted + `)*)\s*-->\s*$`)
	quotedText  = regexp.MustCompile(quoted)
	markerStart = regexp.MustCompile(`<!--\s*example:`)
)

// extractBlocks returns the fenced code blocks of a markdown text with their
// markers. A malformed or unknown marker, a marker that no code block
// follows, and an unclosed block are errors: a mistyped marker must not
// silently turn an error example into one that is expected to be valid.
func extractBlocks(file, text string) ([]*block, error) {
	lines := strings.Split(text, "\n")
	var (
		blocks  []*block
		pending *marker
	)
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if markerStart.MatchString(line) {
			if pending != nil {
				return nil, fmt.Errorf("%s:%d: a second marker before the code block of the one on line %d", file, i+1, pending.line)
			}
			m, err := parseMarker(line)
			if err != nil {
				return nil, fmt.Errorf("%s:%d: %w", file, i+1, err)
			}
			m.line = i + 1
			pending = m
			continue
		}
		open := fenceOpen.FindStringSubmatch(line)
		if open == nil {
			if pending != nil && strings.TrimSpace(line) != "" {
				return nil, fmt.Errorf("%s:%d: the marker is not followed by a code block", file, pending.line)
			}
			continue
		}
		indent, fence := len(open[1]), open[2]
		b := &block{file: file, line: i + 1, lang: strings.ToLower(open[3]), marker: pending}
		pending = nil
		var body []string
		closed := false
		for i++; i < len(lines); i++ {
			if isFenceClose(lines[i], fence) {
				closed = true
				break
			}
			body = append(body, dedent(lines[i], indent))
		}
		if !closed {
			return nil, fmt.Errorf("%s:%d: the code block is not closed", file, b.line)
		}
		b.text = strings.Join(body, "\n") + "\n"
		blocks = append(blocks, b)
	}
	if pending != nil {
		return nil, fmt.Errorf("%s:%d: the marker is not followed by a code block", file, pending.line)
	}
	return blocks, nil
}

func parseMarker(line string) (*marker, error) {
	sub := markerLine.FindStringSubmatch(line)
	if sub == nil {
		return nil, fmt.Errorf(`malformed example marker %q: want <!-- example: error|not-built|skip "text" -->`, strings.TrimSpace(line))
	}
	m := &marker{kind: sub[1]}
	for _, q := range quotedText.FindAllString(sub[2], -1) {
		msg, err := strconv.Unquote(q)
		if err != nil {
			return nil, fmt.Errorf("example marker %q: %w", strings.TrimSpace(line), err)
		}
		if msg == "" {
			return nil, fmt.Errorf("example marker %q: an empty text checks nothing", strings.TrimSpace(line))
		}
		m.messages = append(m.messages, msg)
	}
	switch m.kind {
	case markerError, markerSkip:
		if len(m.messages) == 0 {
			return nil, fmt.Errorf("example marker %q needs its text in quotes (the expected message, or why it is skipped)", strings.TrimSpace(line))
		}
	case markerNotBuilt:
	default:
		return nil, fmt.Errorf("unknown example marker %q: want error, not-built or skip", m.kind)
	}
	return m, nil
}

// isFenceClose tells whether line closes a block opened with fence: the same
// character, at least as many, nothing after it.
func isFenceClose(line, fence string) bool {
	t := strings.TrimSpace(line)
	if len(t) < len(fence) || t[0] != fence[0] {
		return false
	}
	return strings.Trim(t, fence[:1]) == ""
}

// dedent removes up to n leading spaces: a block inside a list item is
// indented as a whole.
func dedent(line string, n int) string {
	for ; n > 0 && strings.HasPrefix(line, " "); n-- {
		line = line[1:]
	}
	return line
}
