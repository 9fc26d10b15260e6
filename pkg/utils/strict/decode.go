// Package strict decodes the documents users write (the providerConfigs of
// both extension types, the agent's config file) one way: YAML or JSON, exactly
// one document, valid UTF-8, within a size bound, keys case-sensitive, no
// unknown or duplicate keys. Its errors are bounded in number and size and
// never echo more than an excerpt of the input, so a hostile document cannot
// blow up an admission response or a status.
package strict

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	yamlv3 "go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

const (
	// MaxErrors is how many decoding errors are reported; the rest are counted.
	MaxErrors = 10
	// MaxExcerpt is the longest excerpt of a value an error quotes.
	MaxExcerpt = 64
	// maxMessage is the longest message of an underlying decoder quoted.
	maxMessage = 256
	// kjsonMaxErrors is where sigs.k8s.io/json stops collecting strict errors.
	kjsonMaxErrors = 100
)

// Options bound what a document may be.
type Options struct {
	// MaxBytes is the largest document accepted.
	MaxBytes int
	// Required is the message when the document is empty; empty input is
	// always an error, since an empty config would mean "enforce nothing".
	Required string
}

// Decode decodes raw into out. Every error is under fldPath and quotes at most
// an excerpt of the input.
func Decode(raw []byte, out any, fldPath *field.Path, opts Options) field.ErrorList {
	if len(bytes.TrimSpace(raw)) == 0 {
		return field.ErrorList{field.Required(fldPath, opts.Required)}
	}
	if opts.MaxBytes > 0 && len(raw) > opts.MaxBytes {
		return field.ErrorList{field.TooLong(fldPath, Excerpt(string(raw)), opts.MaxBytes)}
	}
	if !utf8.Valid(raw) {
		return field.ErrorList{field.Invalid(fldPath, Excerpt(string(raw)), "not valid UTF-8")}
	}
	if empty, err := singleDocument(raw); err != nil {
		return field.ErrorList{field.Invalid(fldPath, Excerpt(string(raw)), err.Error())}
	} else if empty {
		return field.ErrorList{field.Required(fldPath, opts.Required)}
	}
	// YAMLToJSONStrict refuses duplicate keys; kjson is case-sensitive and
	// names the full path of an unknown field.
	js, err := yaml.YAMLToJSONStrict(raw)
	if err != nil {
		return field.ErrorList{field.Invalid(fldPath, Excerpt(string(raw)), "not valid JSON or YAML: "+cut(err.Error(), maxMessage))}
	}
	strictErrs, err := kjson.UnmarshalStrict(js, out, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
	if err != nil {
		return field.ErrorList{field.Invalid(fldPath, Excerpt(string(raw)), "cannot be decoded: "+cut(err.Error(), maxMessage))}
	}
	var errs field.ErrorList
	for i, e := range strictErrs {
		if i == MaxErrors {
			more := fmt.Sprintf("and %d more decoding errors", len(strictErrs)-MaxErrors)
			if len(strictErrs) >= kjsonMaxErrors {
				more = fmt.Sprintf("and at least %d more decoding errors", len(strictErrs)-MaxErrors)
			}
			errs = append(errs, field.Invalid(fldPath, Excerpt(string(raw)), more))
			break
		}
		// The messages name the JSON path, e.g. `unknown field "rule.port"`.
		errs = append(errs, field.Invalid(fldPath, Excerpt(string(raw)), cut(e.Error(), maxMessage)))
	}
	return errs
}

// singleDocument refuses trailing content and a second YAML document, which
// the YAML-to-JSON conversion would silently drop; it tells whether the input
// holds no document at all (only comments, or null).
func singleDocument(raw []byte) (empty bool, err error) {
	dec := yamlv3.NewDecoder(bytes.NewReader(raw))
	var first yamlv3.Node
	if err := dec.Decode(&first); err != nil {
		if errors.Is(err, io.EOF) {
			return true, nil
		}
		return false, fmt.Errorf("not valid JSON or YAML: %s", cut(err.Error(), maxMessage))
	}
	var second yamlv3.Node
	switch err := dec.Decode(&second); {
	case errors.Is(err, io.EOF):
	case err != nil:
		return false, fmt.Errorf("trailing content after the document: %s", cut(err.Error(), maxMessage))
	default:
		return false, errors.New("more than one document: write exactly one")
	}
	// A lone null (or ~) decodes to nothing: as empty as no document.
	doc := &first
	if doc.Kind == yamlv3.DocumentNode && len(doc.Content) == 1 {
		doc = doc.Content[0]
	}
	return doc.Kind == yamlv3.ScalarNode && doc.Tag == "!!null", nil
}

// Excerpt returns s, or its beginning and its length when it is longer than
// MaxExcerpt bytes, cut at a character boundary.
func Excerpt(s string) string { return cut(s, MaxExcerpt) }

func cut(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	end := limit
	for end > 0 && !utf8.RuneStart(s[end]) {
		end--
	}
	return fmt.Sprintf("%s... (%d bytes)", s[:end], len(s))
}
