package strict_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/strict"
)

// FuzzDecode: no input panics the decoder, and what it reports stays small
// whatever it is fed.
func FuzzDecode(f *testing.F) {
	for _, seed := range []string{`{"name":"a"}`, "name: a\n---\nname: b", `{"name":"a"}{}`, "\xff", "inner: {port: 1}", "[1, 2", "null"} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		errs := strict.Decode(raw, &doc{}, field.NewPath("p"), strict.Options{MaxBytes: 1 << 16})
		if len(errs) == 0 {
			return
		}
		if n := len(errs.ToAggregate().Error()); n > 4096 {
			t.Fatalf("error of %d bytes for %d bytes of input", n, len(raw))
		}
	})
}
