package metalapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi2"
	"github.com/getkin/kin-openapi/openapi2conv"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

// MetalGoModule is the module whose metal-api.json the server validates
// against: the spec of the client the extension is built with.
const MetalGoModule = "github.com/metal-stack/metal-go"

// Spec is metal-go's metal-api.json (Swagger 2.0), converted to OpenAPI 3
// and resolved as one root document, so that self-referencing types
// (v1.MachineNic's neighbors) are validated to any depth.
type Spec struct {
	// Path is the file the spec was read from.
	Path   string
	doc    *openapi3.T
	router routers.Router
}

var (
	specOnce sync.Once
	spec     *Spec
	specErr  error
)

// LoadSpec reads metal-api.json from the metal-go module this build uses
// (`go list -m`), once per process.
func LoadSpec() (*Spec, error) {
	specOnce.Do(func() { spec, specErr = loadSpec() })
	return spec, specErr
}

func loadSpec() (*Spec, error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", MetalGoModule).Output()
	if err != nil {
		return nil, fmt.Errorf("locating %s (go list -m): %w", MetalGoModule, err)
	}
	path := filepath.Join(strings.TrimSpace(string(out)), "metal-api.json")
	data, err := os.ReadFile(path) //nolint:gosec // the module cache
	if err != nil {
		return nil, err
	}
	return ParseSpec(path, data)
}

// ParseSpec parses a Swagger 2.0 document.
func ParseSpec(path string, data []byte) (*Spec, error) {
	var doc2 openapi2.T
	if err := json.Unmarshal(data, &doc2); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	doc, err := openapi2conv.ToV3(&doc2)
	if err != nil {
		return nil, fmt.Errorf("%s: converting to OpenAPI 3: %w", path, err)
	}
	if err := openapi3.NewLoader().ResolveRefsIn(doc, nil); err != nil {
		return nil, fmt.Errorf("%s: resolving references: %w", path, err)
	}
	// The metal-api is served on whatever host the test server has.
	doc.Servers = nil
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &Spec{Path: path, doc: doc, router: router}, nil
}

// validation is one request's check against the spec.
type validation struct {
	spec  *Spec
	input *openapi3filter.RequestValidationInput
}

// ValidateRequest checks a request against the spec. body is the request's
// body; the request's own body is not read. metal-go sends null for an
// optional array it has no value for (its models have no omitempty there),
// and its own model validation takes that as absent: such nulls are dropped
// before validation. A null where the spec requires an array is refused, as
// metal-go's model validation refuses it; nothing else is forgiven.
func (s *Spec) ValidateRequest(ctx context.Context, r *http.Request, body []byte) (*validation, error) {
	route, params, err := s.router.FindRoute(r)
	if err != nil {
		return nil, fmt.Errorf("%s %s: no such operation in %s: %w", r.Method, r.URL.Path, filepath.Base(s.Path), err)
	}
	clone := r.Clone(ctx)
	if len(body) > 0 {
		if body, err = dropNullArrays(body, requestSchema(route)); err != nil {
			return nil, fmt.Errorf("%s %s: request body: %w", r.Method, r.URL.Path, err)
		}
	}
	clone.Body = io.NopCloser(bytes.NewReader(body))
	in := &openapi3filter.RequestValidationInput{Request: clone, PathParams: params, Route: route,
		Options: &openapi3filter.Options{MultiError: true, AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}}
	v := &validation{spec: s, input: in}
	if err := openapi3filter.ValidateRequest(ctx, in); err != nil {
		return v, fmt.Errorf("%s %s (%s): %w", r.Method, r.URL.Path, route.Operation.OperationID, err)
	}
	return v, nil
}

// ValidateResponse checks a response to the request. An error body of the
// metal-api is a JSON string holding the error object (metal-lib's
// httperrors.HTTPErrorResponse marshals itself as text, and the spec's
// x-go-type names that type): the string is required, and its content is
// validated against the spec's schema.
func (v *validation) ValidateResponse(ctx context.Context, status int, header http.Header, body []byte) error {
	op := v.input.Route.Operation.OperationID
	if status >= 400 {
		var inner string
		if err := json.Unmarshal(body, &inner); err != nil {
			return fmt.Errorf("%s: error response %d: the metal-api's error bodies are JSON strings (metal-lib's HTTPErrorResponse), got %.100q", op, status, body)
		}
		body = []byte(inner)
	}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: v.input, Status: status, Header: header,
		Body: io.NopCloser(bytes.NewReader(body)), Options: &openapi3filter.Options{MultiError: true, IncludeResponseStatus: true}}
	if err := openapi3filter.ValidateResponse(ctx, out); err != nil {
		return fmt.Errorf("%s: response %d: %w", op, status, err)
	}
	return nil
}

func requestSchema(route *routers.Route) *openapi3.Schema {
	rb := route.Operation.RequestBody
	if rb == nil || rb.Value == nil {
		return nil
	}
	mt := rb.Value.Content.Get("application/json")
	if mt == nil || mt.Schema == nil {
		return nil
	}
	return mt.Schema.Value
}

// dropNullArrays removes the null values the schema types as optional
// arrays; a null required array stays, for the validation to refuse.
func dropNullArrays(body []byte, schema *openapi3.Schema) ([]byte, error) {
	if schema == nil {
		return body, nil
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return json.Marshal(walkNulls(v, schema))
}

func walkNulls(v any, s *openapi3.Schema) any {
	switch val := v.(type) {
	case map[string]any:
		for name, prop := range s.Properties {
			if prop == nil || prop.Value == nil {
				continue
			}
			child, present := val[name]
			switch {
			case !present:
			case child == nil && prop.Value.Type.Is(openapi3.TypeArray):
				if !isRequired(s, name) {
					delete(val, name)
				}
			default:
				val[name] = walkNulls(child, prop.Value)
			}
		}
		return val
	case []any:
		if s.Items != nil && s.Items.Value != nil {
			for i := range val {
				val[i] = walkNulls(val[i], s.Items.Value)
			}
		}
		return val
	}
	return v
}

func isRequired(s *openapi3.Schema, name string) bool {
	for _, r := range s.Required {
		if r == name {
			return true
		}
	}
	return false
}
