package strict_test

import (
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/strict"
)

type inner struct {
	Port int `json:"port"`
}

type doc struct {
	Name  string   `json:"name"`
	Size  string   `json:"size,omitempty"`
	Inner *inner   `json:"inner,omitempty"`
	List  []string `json:"list,omitempty"`
}

var _ = Describe("Decode", func() {
	path := field.NewPath("providerConfig")
	opts := strict.Options{MaxBytes: 4096, Required: "a config is required"}

	decode := func(raw string) (*doc, field.ErrorList) {
		d := &doc{}
		errs := strict.Decode([]byte(raw), d, path, opts)
		return d, errs
	}

	It("decodes JSON and YAML alike", func() {
		d, errs := decode(`{"name":"a","inner":{"port":1}}`)
		Expect(errs).To(BeEmpty())
		Expect(d.Inner.Port).To(Equal(1))
		d, errs = decode("name: a\ninner: {port: 2}\n")
		Expect(errs).To(BeEmpty())
		Expect(d.Inner.Port).To(Equal(2))
	})

	DescribeTable("refuses, naming the field and quoting no more than an excerpt",
		func(raw, want string) {
			_, errs := decode(raw)
			Expect(errs).NotTo(BeEmpty())
			msg := errs.ToAggregate().Error()
			Expect(msg).To(ContainSubstring(want))
			Expect(msg).To(HavePrefix("providerConfig"))
		},
		Entry("empty", "  \n", "providerConfig: Required value: a config is required"),
		Entry("only a comment", "# nothing here\n", "Required value"),
		Entry("null", "null\n", "Required value"),
		Entry("an unknown field", `{"name":"a","colour":"red"}`, `unknown field "colour"`),
		Entry("an unknown nested field", `{"name":"a","inner":{"prot":1}}`, `unknown field "inner.prot"`),
		Entry("a key in the wrong case", `{"name":"a","SIZE":"x"}`, `unknown field "SIZE"`),
		Entry("a duplicate key (JSON)", `{"name":"a","name":"b"}`, `"name"`),
		Entry("a duplicate key (YAML)", "name: a\nname: b\n", `"name"`),
		Entry("trailing content", `{"name":"a"}{"name":"b"}`, "trailing content after the document"),
		Entry("a second YAML document", "name: a\n---\nname: b\n", "more than one document"),
		Entry("invalid UTF-8", "name: \xff\xfe\n", "not valid UTF-8"),
		Entry("a syntax error", `{"name": [`, "not valid JSON or YAML"),
		Entry("a wrong type", `{"name":"a","inner":{"port":"x"}}`, "inner.port"),
	)

	It("refuses a document over the size bound without echoing it", func() {
		raw := `{"name":"` + strings.Repeat("a", 5000) + `"}`
		_, errs := decode(raw)
		Expect(errs).To(HaveLen(1))
		Expect(errs[0].Type).To(Equal(field.ErrorTypeTooLong))
		Expect(len(errs.ToAggregate().Error())).To(BeNumerically("<", 300))
	})

	It("bounds the number and the size of the errors of a hostile document", func() {
		var b strings.Builder
		b.WriteString(`{"name":"a"`)
		for i := range 200 {
			b.WriteString(`,"unknown` + strings.Repeat("x", 10) + string(rune('a'+i%26)) + strings.Repeat("y", i) + `":1`)
		}
		b.WriteString(`}`)
		d := &doc{}
		errs := strict.Decode([]byte(b.String()), d, path, strict.Options{MaxBytes: 1 << 20})
		Expect(errs).To(HaveLen(strict.MaxErrors + 1))
		Expect(errs[strict.MaxErrors].Detail).To(Equal("and at least 90 more decoding errors"), "sigs.k8s.io/json stops at 100")
		Expect(len(errs.ToAggregate().Error())).To(BeNumerically("<", 4000), "each error quotes an excerpt only")
	})

	It("cuts an excerpt at a character boundary", func() {
		s := strings.Repeat("ä", 100)
		e := strict.Excerpt(s)
		Expect(e).To(HaveSuffix("... (200 bytes)"))
		Expect(strings.ToValidUTF8(e, "?")).To(Equal(e))
	})
})
