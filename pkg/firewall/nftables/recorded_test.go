package nftables_test

import (
	"math"
	"strings"

	gnft "github.com/google/nftables"
	"github.com/google/nftables/expr"
	"github.com/google/nftables/userdata"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gstruct"
	"golang.org/x/sys/unix"
	"k8s.io/utils/ptr"

	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/nftables"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/ruleset"
)

// These specs run without root: the Programmer talks to a fake kernel
// through google/nftables' test dial, and they assert on the netlink
// requests it sends. The specs in apply_test.go check the same behaviour
// against the real kernel.
var _ = Describe("Programmer against a recorded kernel", func() {
	var (
		k *fakeKernel
		p *nftables.Programmer
	)
	BeforeEach(func() {
		k = newFakeKernel()
		p = nftables.NewRecordingProgrammer(k.dial)
	})

	apply := func(rs *ruleset.Ruleset) nftables.Result {
		GinkgoHelper()
		res, err := p.Apply(rs)
		Expect(err).NotTo(HaveOccurred())
		return res
	}
	extra := &fwv1alpha1.PolicySpec{Egress: []fwv1alpha1.EgressRule{{To: []fwv1alpha1.IPBlock{{CIDR: "192.0.2.0/24"}},
		Ports: []fwv1alpha1.PolicyPort{{Port: ptr.To(int32(443))}}}}}

	It("programs a new table in one batch: its table, chains, sets with their elements, then rules", func() {
		rs := build(mixed)
		Expect(apply(rs).Mode).To(Equal(nftables.Full))

		Expect(k.batches()).To(HaveLen(1))
		batch := k.batches()[0]
		Expect(batch).To(HaveEach(HaveField("Table", ruleset.TableName)), "no other table is touched")
		Expect(opNamesOf(batch[:3])).To(Equal([]string{"NEWTABLE", "DELTABLE", "NEWTABLE"}),
			"adding first lets the delete succeed on a missing table")

		var chains, sets []string
		var comments []string
		lastChain, firstSet, lastSet, firstRule := -1, -1, -1, -1
		for i, o := range batch {
			switch o.Op {
			case "NEWCHAIN":
				chains, lastChain = append(chains, o.Name), i
			case "NEWSET":
				sets, lastSet = append(sets, o.Name), i
				if firstSet < 0 {
					firstSet = i
				}
			case "NEWRULE":
				comments = append(comments, o.Comment)
				if firstRule < 0 {
					firstRule = i
				}
			}
		}
		var wantChains, wantSets, wantComments []string
		for _, c := range rs.Chains {
			wantChains = append(wantChains, c.Name)
			for _, r := range c.Rules {
				wantComments = append(wantComments, ruleset.Comment(r))
			}
		}
		for _, s := range rs.Sets {
			wantSets = append(wantSets, s.Name)
		}
		Expect(chains).To(Equal(wantChains))
		Expect(sets).To(Equal(wantSets))
		Expect(comments).To(Equal(wantComments))
		Expect(lastChain).To(BeNumerically("<", firstSet), "the verdict maps' elements jump to the chains")
		Expect(lastSet).To(BeNumerically("<", firstRule), "rules look up the sets")

		By("reading only what a first apply needs: whether the table exists, the counters to carry, the generation")
		Expect(k.reads()).To(Equal([]string{"GETTABLE", "GETCHAIN", "GETGEN"}))
		exists, err := p.TableExists(ruleset.TableName)
		Expect(err).NotTo(HaveOccurred())
		Expect(exists).To(BeTrue())
		closed, err := p.ChainExists(ruleset.TableName, ruleset.ClosedChain)
		Expect(err).NotTo(HaveOccurred())
		Expect(closed).To(BeFalse(), "a built ruleset is not the closed table")

		By("the closed table: its chain is found")
		apply(ruleset.Closed())
		closed, err = p.ChainExists(ruleset.TableName, ruleset.ClosedChain)
		Expect(err).NotTo(HaveOccurred())
		Expect(closed).To(BeTrue())
	})

	It("sends nothing for an unchanged ruleset, and reads nothing while the generation is its own", func() {
		apply(build(mixed))
		k.reset()
		Expect(apply(build(mixed)).Mode).To(Equal(nftables.Unchanged))
		Expect(k.batches()).To(BeEmpty())
		Expect(k.reads()).To(HaveEach("GETGEN"))

		By("reading the kernel back after Forget, its elements decoding as the model's")
		p.Forget()
		k.reset()
		Expect(apply(build(mixed)).Mode).To(Equal(nftables.Unchanged))
		Expect(k.batches()).To(BeEmpty())
		Expect(k.reads()).To(ContainElements("GETTABLE", "GETSET", "GETCHAIN", "GETRULE", "GETSETELEM"))
	})

	It("sends only the changed set elements, in one batch", func() {
		apply(build(mixed))
		k.reset()
		res := apply(build(mixed, extra))
		Expect(res).To(And(HaveField("Mode", nftables.Elements), HaveField("Added", 1), HaveField("Deleted", 0)))
		added := setElem{Key: concat("192.0.2.0", unix.IPPROTO_TCP, 443), KeyEnd: concat("192.0.2.255", unix.IPPROTO_TCP, 443)}
		Expect(k.batches()).To(HaveExactElements(HaveExactElements(And(
			HaveField("Op", "NEWSETELEM"), HaveField("Name", HavePrefix("egress_v4")), HaveField("Elements", Equal([]setElem{added}))))))
		Expect(k.reads()).To(HaveEach("GETGEN"), "the last apply's state stands for the kernel's")

		k.reset()
		res = apply(build(mixed))
		Expect(res).To(And(HaveField("Mode", nftables.Elements), HaveField("Added", 0), HaveField("Deleted", 1)))
		Expect(k.batches()).To(HaveExactElements(HaveExactElements(And(
			HaveField("Op", "DELSETELEM"), HaveField("Elements", Equal([]setElem{added}))))))
	})

	It("removes a set's old elements before adding its new ones", func() {
		except := func(cidr string) *fwv1alpha1.PolicySpec {
			return &fwv1alpha1.PolicySpec{Egress: []fwv1alpha1.EgressRule{{To: []fwv1alpha1.IPBlock{{CIDR: "0.0.0.0/0", Except: []string{cidr}}}}}}
		}
		apply(build(except("10.0.0.0/8")))
		k.reset()
		Expect(apply(build(except("10.0.0.0/9"))).Mode).To(Equal(nftables.Elements))
		// 0.0.0.0-9.255.255.255 stays; 11.0.0.0-255.255.255.255 becomes
		// 10.128.0.0-255.255.255.255, a range to the last address, which has
		// no interval-end element.
		Expect(k.batches()).To(HaveExactElements(HaveExactElements(
			gstruct.MatchFields(gstruct.IgnoreExtras, gstruct.Fields{"Op": Equal("DELSETELEM"), "Name": Equal("egress_any_v4"),
				"Elements": Equal([]setElem{{Key: []byte{11, 0, 0, 0}}})}),
			gstruct.MatchFields(gstruct.IgnoreExtras, gstruct.Fields{"Op": Equal("NEWSETELEM"), "Name": Equal("egress_any_v4"),
				"Elements": Equal([]setElem{{Key: []byte{10, 128, 0, 0}}})}),
		)))
	})

	It("reads the kernel again and repairs it when someone else changed it", func() {
		apply(build(mixed))
		deleted := 0
		for _, s := range build(mixed).Sets {
			if strings.HasPrefix(s.Name, "egress_v4_") && s.Kind == ruleset.AddrProtoPortSet &&
				k.deleteElement(ruleset.TableName, s.Name, func(e setElem) bool { return string(e.Key) == string(concat("203.0.113.0", unix.IPPROTO_UDP, 53)) }) {
				deleted++
			}
		}
		Expect(deleted).To(Equal(1))
		k.reset()
		res := apply(build(mixed))
		Expect(res).To(And(HaveField("Mode", nftables.Elements), HaveField("Added", 1), HaveField("Deleted", 0)))
		Expect(k.reads()).To(ContainElement("GETSETELEM"), "another generation: the cached state is not trusted")
		Expect(k.batches()).To(HaveExactElements(HaveExactElements(And(HaveField("Op", "NEWSETELEM"),
			HaveField("Elements", ContainElement(HaveField("Key", concat("203.0.113.0", unix.IPPROTO_UDP, 53))))))))
	})

	It("replaces the table when the rules change, leaving other tables alone and carrying the counters on", func() {
		foreign := &gnft.Table{Name: "foreign", Family: gnft.TableFamilyIPv4}
		c, err := gnft.New(gnft.WithTestDial(k.dial))
		Expect(err).NotTo(HaveOccurred())
		c.AddTable(foreign)
		Expect(c.Flush()).To(Succeed())

		rs := build(mixed)
		apply(rs)
		counted := countedRule(rs)
		setCounter(k, counted, 7, 700)

		fw2 := *fw
		fw2.RateLimits = []fwv1alpha1.RateLimit{{Interface: "eth1", Rate: 200}}
		changed, err := ruleset.Build(&fw2, []*fwv1alpha1.PolicySpec{mixed}, nil)
		Expect(err).NotTo(HaveOccurred())
		k.reset()
		Expect(apply(changed).Mode).To(Equal(nftables.Full))
		Expect(k.batches()).To(HaveLen(1))
		Expect(k.batches()[0]).To(HaveEach(HaveField("Table", ruleset.TableName)))
		Expect(k.tables).To(HaveKey("foreign"))

		counters, err := p.RuleCounters(ruleset.TableName)
		Expect(err).NotTo(HaveOccurred())
		Expect(counters).To(HaveKeyWithValue(counted.ID, nftables.Counter{Packets: 7, Bytes: 700}))
	})

	It("keeps the kernel's ruleset when the kernel refuses the batch, and reads it back next time", func() {
		apply(build(mixed))
		gen, before := k.gen, k.tables[ruleset.TableName]
		k.refuse = unix.EINVAL
		_, err := p.Apply(build(mixed, extra))
		Expect(err).To(HaveOccurred())
		Expect(k.gen).To(Equal(gen))
		Expect(k.tables[ruleset.TableName]).To(BeIdenticalTo(before))

		k.reset()
		Expect(apply(build(mixed)).Mode).To(Equal(nftables.Unchanged))
		Expect(k.reads()).To(ContainElement("GETTABLE"), "nothing of the failed apply is taken for the kernel's state")
	})

	It("chunks set elements into messages whose attributes fit their 16-bit lengths", func() {
		rs := build(policies(20000))
		Expect(apply(rs).Mode).To(Equal(nftables.Full))
		batch := k.batches()[0]
		sent, size := 0, 0
		for _, o := range batch {
			size += o.DataLen
			if o.Op == "NEWSETELEM" {
				// A range's start and its interval end travel together.
				Expect(len(o.Elements)).To(BeNumerically("<=", nftables.ElementsPerMessage+1))
				Expect(o.DataLen).To(BeNumerically("<", math.MaxUint16), "set %s", o.Name)
				sent += len(o.Elements)
			}
		}
		Expect(sent).To(Equal(k.elementCount(ruleset.TableName)), "every element arrived once")
		Expect(sent).To(BeNumerically(">", 10*nftables.ElementsPerMessage))
		Expect(size).To(BeNumerically("<", nftables.SocketBufferBytes), "the batch fits the socket buffer the agent asks for")

		By("reading all of it back as the model")
		p.Forget()
		Expect(apply(rs).Mode).To(Equal(nftables.Unchanged))
	})
})

// countedRule returns a rule of rs with a counter and an ID no other rule has.
func countedRule(rs *ruleset.Ruleset) *ruleset.Rule {
	GinkgoHelper()
	ids := map[string]int{}
	for _, c := range rs.Chains {
		for _, r := range c.Rules {
			ids[r.ID]++
		}
	}
	for _, c := range rs.Chains {
		for _, r := range c.Rules {
			if r.Counter && ids[r.ID] == 1 {
				return r
			}
		}
	}
	Fail("no rule with a counter of its own")
	return nil
}

// setCounter makes the kernel's copy of rule r count packets and bytes: it
// replaces the stored rule by one with only a counter and r's comment, which
// is all the Programmer reads of it.
func setCounter(k *fakeKernel, r *ruleset.Rule, packets, bytes uint64) {
	GinkgoHelper()
	t := k.tables[ruleset.TableName]
	for chain, rules := range t.rules {
		for i, m := range rules {
			if decodeOp(m).Comment != ruleset.Comment(r) {
				continue
			}
			rec := newFakeKernel()
			c, err := gnft.New(gnft.WithTestDial(rec.dial))
			Expect(err).NotTo(HaveOccurred())
			table := &gnft.Table{Name: ruleset.TableName, Family: gnft.TableFamilyINet}
			c.AddRule(&gnft.Rule{Table: table, Chain: &gnft.Chain{Name: chain, Table: table},
				Exprs:    []expr.Any{&expr.Counter{Packets: packets, Bytes: bytes}},
				UserData: userdata.AppendString(nil, userdata.TypeComment, ruleset.Comment(r))})
			Expect(c.Flush()).NotTo(Succeed(), "the recorder has no such table") // but it recorded the rule
			rules[i] = rec.requests[1]
			return
		}
	}
	Fail("rule " + r.ID + " not in the kernel")
}
