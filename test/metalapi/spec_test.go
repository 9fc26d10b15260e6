package metalapi_test

import (
	"encoding/json"
	"net/http"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/metal-firewall/gardener-extension-firewall/test/metalapi"
)

var _ = Describe("Spec", func() {
	nic := func(neighbors string) string {
		return `{"identifier":"eth0","mac":"aa:bb:cc:dd:ee:ff","name":"eth0","neighbors":[` + neighbors + `]}`
	}
	firewallWith := func(nics string) []byte {
		return []byte(`{"id":"m1","bios":{"date":"","vendor":"","version":""},"events":{"crash_loop":false,"failed_machine_reclaim":false,"log":[]},` +
			`"hardware":{"cpu_cores":1,"disks":[],"memory":1,"nics":[` + nics + `]},"ledstate":{"description":"","value":""},"liveliness":"Alive",` +
			`"state":{"description":"","metal_hammer_version":"","value":""},"tags":[]}`)
	}
	validate := func(ctx SpecContext, status int, body []byte) error {
		GinkgoHelper()
		spec, err := metalapi.LoadSpec()
		Expect(err).NotTo(HaveOccurred())
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://metal-api/v1/firewall/m1", nil)
		Expect(err).NotTo(HaveOccurred())
		v, err := spec.ValidateRequest(ctx, req, nil)
		Expect(err).NotTo(HaveOccurred())
		return v.ValidateResponse(ctx, status, http.Header{"Content-Type": {"application/json"}}, body)
	}

	It("is metal-go's metal-api.json, validated as one root document", func() {
		spec, err := metalapi.LoadSpec()
		Expect(err).NotTo(HaveOccurred())
		Expect(spec.Path).To(HaveSuffix("github.com/metal-stack/metal-go@v0.42.5/metal-api.json"))
	})

	It("validates the self-referencing v1.MachineNic at any depth", func(ctx SpecContext) {
		Expect(validate(ctx, 200, firewallWith(nic(nic(nic("")))))).To(Succeed())
		err := validate(ctx, 200, firewallWith(nic(nic(`{"identifier":"eth9","name":"eth9","neighbors":[]}`))))
		Expect(err).To(MatchError(And(ContainSubstring("/hardware/nics/0/neighbors/0/neighbors/0"), ContainSubstring(`"mac" is missing`))))
	})

	It("finds a response that leaves out what the spec requires", func(ctx SpecContext) {
		Expect(validate(ctx, 200, []byte(`{"id":"m1"}`))).To(MatchError(ContainSubstring(`property "bios" is missing`)))
	})

	It("requires error bodies to be the JSON string the metal-api sends, holding a valid error", func(ctx SpecContext) {
		inner := `{"statuscode":404,"message":"no machine with id \"m1\" found"}`
		asString, err := json.Marshal(inner)
		Expect(err).NotTo(HaveOccurred())
		Expect(validate(ctx, 404, asString)).To(Succeed())
		Expect(validate(ctx, 404, []byte(inner))).To(MatchError(ContainSubstring("error bodies are JSON strings")))
		noMessage, err := json.Marshal(`{"statuscode":404}`)
		Expect(err).NotTo(HaveOccurred())
		Expect(validate(ctx, 404, noMessage)).To(MatchError(ContainSubstring(`"message" is missing`)))
	})
})
