package docs_test

import (
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// The checker itself, on markdown written here: it must catch a broken
// example, a wrong documented message and a mistyped marker.
var _ = Describe("The example checker", func() {
	const fence = "```"
	md := func(lines ...string) string { return strings.Join(lines, "\n") + "\n" }

	examplesIn := func(text string) ([]*example, error) {
		blocks, err := extractBlocks("test.md", text)
		if err != nil {
			return nil, err
		}
		var all []*example
		for _, b := range blocks {
			found, err := examplesOf(b)
			if err != nil {
				return nil, err
			}
			all = append(all, found...)
		}
		return all, nil
	}

	verdicts := func(text string) []error {
		examples, err := examplesIn(text)
		Expect(err).NotTo(HaveOccurred())
		Expect(examples).NotTo(BeEmpty())
		var errs []error
		for _, e := range examples {
			errs = append(errs, verdict(e))
		}
		return errs
	}

	agentConfig := md(
		"sources:",
		"  static:",
		"    firewall: {internalPrefixes: [10.0.0.0/8]}",
		"controllers:",
		"  firewall: {source: static}",
	)

	It("accepts a valid agent config and refuses a broken one", func() {
		Expect(verdicts(md(fence+"yaml", agentConfig+fence))).To(HaveExactElements(Succeed()))
		broken := strings.Replace(agentConfig, "10.0.0.0/8", "10.0.0/8", 1)
		Expect(verdicts(md(fence+"yaml", broken+fence))).To(HaveExactElements(MatchError(ContainSubstring(`"10.0.0/8": invalid CIDR`))))
	})

	It("finds providerConfigs in a Shoot, in a list of extensions, indented in a list item", func() {
		examples, err := examplesIn(md(
			fence+"yaml",
			"kind: Shoot",
			"spec:",
			"  extensions:",
			"  - type: acl",
			"    providerConfig: {rule: {action: ALLOW, type: remote_ip, cidrs: [203.0.113.0/24]}}",
			fence,
			"- a list item:",
			"  "+fence+"yaml",
			"  - type: firewall",
			"    providerConfig: {size: s, image: i, partition: p, project: q, networks: [internet], internalPrefixes: [10.0.0/8]}",
			"  "+fence,
		))
		Expect(err).NotTo(HaveOccurred())
		Expect(examples).To(HaveLen(2))
		Expect(examples[0].kind).To(Equal(kindACL))
		Expect(examples[0].where).To(Equal("spec.extensions[0].providerConfig"))
		Expect(verdict(examples[0])).To(Succeed())
		Expect(examples[1].kind).To(Equal(kindFirewall))
		Expect(verdict(examples[1])).To(MatchError(ContainSubstring(`providerConfig.internalPrefixes[0]: Invalid value: "10.0.0/8"`)))
	})

	It("checks the documented message of an error example", func() {
		acl := md(
			"- type: acl",
			"  providerConfig: {rule: {action: PERMIT, type: remote_ip, cidrs: [1.2.3.0/24]}}",
		)
		right := `<!-- example: error "providerConfig.rule.action: Unsupported value: \"PERMIT\"" -->`
		Expect(verdicts(md(right, fence+"yaml", acl+fence))).To(HaveExactElements(Succeed()))
		wrong := `<!-- example: error "providerConfig.rule.type" -->`
		Expect(verdicts(md(wrong, fence+"yaml", acl+fence))).To(HaveExactElements(MatchError(ContainSubstring("not with the documented"))))
		valid := strings.Replace(acl, "PERMIT", "ALLOW", 1)
		Expect(verdicts(md(right, fence+"yaml", valid+fence))).To(HaveExactElements(MatchError(ContainSubstring("documented as an error but is accepted"))))
	})

	It("requires a not-built example to be refused with every documented text", func() {
		notBuilt := md(
			fence+"yaml",
			"sources:",
			"  static: {firewall: {}}",
			"controllers:",
			"  firewall: {source: static, flowLogs: {enabled: true}, droptailer: {enabled: true}}",
			fence,
		)
		both := `<!-- example: not-built "unknown field \"controllers.firewall.flowLogs\"" "unknown field \"controllers.firewall.droptailer\"" -->`
		Expect(verdicts(md(both, notBuilt))).To(HaveExactElements(Succeed()))
		other := `<!-- example: not-built "unknown field \"controllers.firewall.flowLogs\"" "ebpf" -->`
		Expect(verdicts(md(other, notBuilt))).To(HaveExactElements(MatchError(ContainSubstring(`not with the documented "ebpf"`))))
		Expect(verdicts(md(`<!-- example: not-built -->`, fence+"yaml", agentConfig+fence))).To(HaveExactElements(MatchError(ContainSubstring("but is accepted"))))
	})

	It("skips a marked block and ignores blocks that are no examples", func() {
		examples, err := examplesIn(md(
			`<!-- example: skip "a sketch" -->`,
			fence+"yaml",
			"sources: {metal: ...",
			fence,
			fence+"yaml",
			"hostNetwork: true",
			fence,
			fence+"sh",
			"make test",
			fence,
		))
		Expect(err).NotTo(HaveOccurred())
		Expect(examples).To(BeEmpty())
	})

	DescribeTable("refuses malformed markdown",
		func(text, message string) {
			_, err := examplesIn(text)
			Expect(err).To(MatchError(ContainSubstring(message)))
		},
		Entry("a mistyped marker", md(`<!-- example: eror "x" -->`, fence+"yaml", agentConfig+fence), `unknown example marker "eror"`),
		Entry("an error marker without its message", md(`<!-- example: error -->`, fence+"yaml", agentConfig+fence), "needs its text in quotes"),
		Entry("a marker with text between it and the block", md(`<!-- example: skip "x" -->`, "prose", fence+"yaml", agentConfig+fence), "not followed by a code block"),
		Entry("a marker at the end", md(`<!-- example: skip "x" -->`), "not followed by a code block"),
		Entry("a marker on a shell block", md(`<!-- example: skip "x" -->`, fence+"sh", "make", fence), `only yaml and json blocks are checked`),
		Entry("a marker on a block without examples", md(`<!-- example: error "x" -->`, fence+"yaml", "a: b", fence), "holds no agent config"),
		Entry("a yaml block that does not parse", md(fence+"yaml", "a: [b", fence), "not valid YAML"),
		Entry("an unclosed block", md(fence+"yaml", agentConfig), "not closed"),
	)
})
