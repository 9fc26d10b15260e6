package config_test

import (
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	agentconfigv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/agentconfig/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/config"
)

var _ = Describe("sources.metal", func() {
	// MEP-16's shape, with the key in a file.
	const metal = `sources:
  metal: {url: "https://metal-api.example.com/metal", hmacFile: /etc/firewall-agent/metal.hmac, type: Metal-View, projectID: p-1}
controllers:
  firewall: {source: metal}
  cwnp: {source: metal}
`
	It("accepts MEP-16's shape with the key in a file or inline, Metal-View by default", func() {
		cfg, err := config.Parse([]byte("name: fw\n" + metal))
		Expect(err).NotTo(HaveOccurred())
		Expect(cfg.Sources.Metal).To(Equal(&agentconfigv1alpha1.MetalSource{URL: "https://metal-api.example.com/metal", HMACFile: "/etc/firewall-agent/metal.hmac", Type: "Metal-View", ProjectID: "p-1"}))

		inline := strings.Replace(strings.Replace(metal, "hmacFile: /etc/firewall-agent/metal.hmac", "hmac: not-a-real-key", 1), ", type: Metal-View", "", 1)
		cfg, err = config.Parse([]byte("name: fw\n" + inline))
		Expect(err).NotTo(HaveOccurred())
		Expect(cfg.Sources.Metal.HMAC).To(Equal("not-a-real-key"))
		Expect(cfg.Sources.Metal.Type).To(Equal(agentconfigv1alpha1.MetalAuthTypeView))
	})

	It("accepts an http URL only when told to", func() {
		cfg, err := config.Parse([]byte("name: fw\n" + strings.Replace(metal, "https://metal-api.example.com/metal\",", "http://metal-api.example.com/metal\", allowHTTP: true,", 1)))
		Expect(err).NotTo(HaveOccurred())
		Expect(cfg.Sources.Metal.URL).To(Equal("http://metal-api.example.com/metal"))
	})

	DescribeTable("refuses what is wrong, naming the field, never the key",
		func(old, replacement string, want ...string) {
			Expect(metal).To(ContainSubstring(old))
			_, err := config.Parse([]byte("name: fw\n" + strings.Replace(metal, old, replacement, 1)))
			Expect(err).To(HaveOccurred())
			for _, w := range want {
				Expect(err.Error()).To(ContainSubstring(w))
			}
			Expect(err.Error()).NotTo(ContainSubstring("s3cr3t"))
		},
		Entry("no key", "hmacFile: /etc/firewall-agent/metal.hmac, ", "", "sources.metal.hmacFile: Required value"),
		Entry("both keys", "hmacFile:", "hmac: s3cr3t, hmacFile:", "sources.metal.hmac: Invalid value: \"(redacted)\": set hmac or hmacFile, not both"),
		Entry("a key with a control character", "hmacFile: /etc/firewall-agent/metal.hmac", `hmac: "s3cr3t\u0007"`, "sources.metal.hmac: Invalid value: \"(redacted)\": must not contain control characters"),
		Entry("a relative key file", "/etc/firewall-agent/metal.hmac", "metal.hmac", `sources.metal.hmacFile: Invalid value: "metal.hmac": must be an absolute path`),
		Entry("a key file with ..", "/etc/firewall-agent/metal.hmac", "/etc/../etc/shadow", "sources.metal.hmacFile: Invalid value"),
		Entry("no URL", `url: "https://metal-api.example.com/metal", `, "", "sources.metal.url: Required value"),
		Entry("no http URL", "https://metal-api.example.com/metal", "file:///etc/passwd", `sources.metal.url: Invalid value: "file:///etc/passwd"`),
		Entry("an http URL", "https://metal-api.example.com", "http://metal-api.example.com", `sources.metal.url: Invalid value: "http://metal-api.example.com/metal": must be https`),
		Entry("credentials in the URL", "https://metal-api.example.com", "https://admin:s3cr3t@metal-api.example.com", "sources.metal.url: Invalid value: \"(redacted)\": must not carry user information"),
		Entry("an edit key", "type: Metal-View", "type: Metal-Edit", `sources.metal.type: Unsupported value: "Metal-Edit": supported values: "Metal-View"`),
		Entry("no project", ", projectID: p-1", "", "sources.metal.projectID: Required value"),
		Entry("a project that is no metal ID", "projectID: p-1", "projectID: \"p 1\"", "sources.metal.projectID: Invalid value"),
		Entry("a controller reading metal without the source", "  metal: {", "  other: {", `unknown field "sources.other"`),
	)

	It("refuses a controller that reads metal when sources.metal is missing", func() {
		_, err := config.Parse([]byte("name: fw\nsources: {static: {firewall: {internalPrefixes: [10.0.0.0/8]}}}\ncontrollers: {firewall: {source: static}, cwnp: {source: metal}}\n"))
		Expect(err).To(MatchError(ContainSubstring(`controllers.cwnp.source: Invalid value: "metal": selected source is not configured under sources.metal`)))
	})
})
