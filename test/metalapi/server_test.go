package metalapi_test

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/go-openapi/strfmt"
	"github.com/metal-stack/metal-go/api/client"
	"github.com/metal-stack/metal-go/api/client/firewall"
	metalmachine "github.com/metal-stack/metal-go/api/client/machine"
	"github.com/metal-stack/metal-go/api/client/network"
	"github.com/metal-stack/metal-go/api/models"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/metalclient"
	"github.com/metal-firewall/gardener-extension-firewall/test/metalapi"
)

const project = "p1"

func newClient(url, authType, key string) *client.MetalAPI {
	GinkgoHelper()
	c, err := metalclient.New(metalclient.Options{URL: url, AuthType: authType, Key: metalclient.StaticKey(key)})
	Expect(err).NotTo(HaveOccurred())
	return c
}

func allocation(mutate func(*models.V1FirewallCreateRequest)) *models.V1FirewallCreateRequest {
	r := &models.V1FirewallCreateRequest{
		Name: "fw-a", Hostname: "fw-a",
		Sizeid: ptr.To(metalapi.Size), Imageid: ptr.To(metalapi.Image), Partitionid: ptr.To("partition-a"), Projectid: ptr.To(project),
		Networks: []*models.V1MachineAllocationNetwork{
			{Networkid: ptr.To(metalapi.PrivateNetwork(project)), Autoacquire: ptr.To(true)},
			{Networkid: ptr.To(metalapi.Internet), Autoacquire: ptr.To(true)},
		},
		SSHPubKeys: []string{},
		Tags:       []string{"owner=test"},
		UserData:   base64.StdEncoding.EncodeToString([]byte(`{"ignition":{"version":"3.5.0"}}`)),
	}
	if mutate != nil {
		mutate(r)
	}
	return r
}

var _ = Describe("metal-api test server", func() {
	var (
		server *metalapi.Server
		edit   *client.MetalAPI
	)
	BeforeEach(func() {
		var err error
		server, err = metalapi.New(metalapi.Inventory(project))
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(server.Close)
		edit = newClient(server.URL, "Metal-Edit", metalapi.EditKey)
	})

	It("allocates a firewall in one call, adds the underlay, finds it by ID and by tags, and frees it", func(ctx SpecContext) {
		resp, err := edit.Firewall.AllocateFirewall(firewall.NewAllocateFirewallParamsWithContext(ctx).WithBody(allocation(nil)), nil)
		Expect(err).NotTo(HaveOccurred())
		fw := resp.Payload
		Expect(fw.Allocation.Name).To(HaveValue(Equal("fw-a")))
		var networks []string
		for _, n := range fw.Allocation.Networks {
			networks = append(networks, *n.Networkid)
			Expect(n.Ips).To(HaveLen(1))
		}
		Expect(networks).To(ConsistOf(metalapi.PrivateNetwork(project), metalapi.Internet, metalapi.Underlay))
		Expect(server.Allocations()).To(Equal(1))

		got, err := edit.Firewall.FindFirewall(firewall.NewFindFirewallParamsWithContext(ctx).WithID(*fw.ID), nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(got.Payload.Tags).To(ContainElement("owner=test"))
		Expect(got.Payload.Events.Log[0].Event).To(HaveValue(Equal("Phoned Home")), "without hardware a machine phones home at once")

		found, err := edit.Firewall.FindFirewalls(firewall.NewFindFirewallsParamsWithContext(ctx).WithBody(&models.V1FirewallFindRequest{
			AllocationProject: project, AllocationName: "fw-a", Tags: []string{"owner=test"}}), nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(found.Payload).To(HaveLen(1))
		none, err := edit.Firewall.FindFirewalls(firewall.NewFindFirewallsParamsWithContext(ctx).WithBody(&models.V1FirewallFindRequest{Tags: []string{"owner=other"}}), nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(none.Payload).To(BeEmpty())

		_, ever := server.FreedAt(*fw.ID)
		Expect(ever).To(BeFalse())
		before := time.Now()
		_, err = edit.Machine.FreeMachine(metalmachine.NewFreeMachineParamsWithContext(ctx).WithID(*fw.ID), nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(server.Allocated()).To(BeEmpty())
		freed, ever := server.FreedAt(*fw.ID)
		Expect(ever).To(BeTrue())
		Expect(freed).To(BeTemporally(">=", before))
		_, err = edit.Firewall.FindFirewall(firewall.NewFindFirewallParamsWithContext(ctx).WithID(*fw.ID), nil)
		Expect(metalclient.Wrap("finding", err)).To(MatchError(ContainSubstring("404 Not Found: machine is not a firewall")))
		server.ExpectNoViolations()
	})

	DescribeTable("refuses allocations with the metal-api's status codes and messages",
		func(ctx SpecContext, mutate func(*models.V1FirewallCreateRequest), code int, message string) {
			_, err := edit.Firewall.AllocateFirewall(firewall.NewAllocateFirewallParamsWithContext(ctx).WithBody(allocation(mutate)), nil)
			err = metalclient.Wrap("allocating a firewall", err)
			Expect(metalclient.StatusCode(err)).To(Equal(code), "%v", err)
			Expect(err).To(MatchError(ContainSubstring(message)))
			Expect(metalclient.Definite(err)).To(BeTrue())
			Expect(server.Allocated()).To(BeEmpty())
			server.ExpectNoViolations()
		},
		Entry("unknown size", func(r *models.V1FirewallCreateRequest) { r.Sizeid = ptr.To("huge") }, 400, `size:huge not found`),
		Entry("unknown image", func(r *models.V1FirewallCreateRequest) { r.Imageid = ptr.To("windows") }, 400, `no image with id "windows" found`),
		Entry("unknown partition", func(r *models.V1FirewallCreateRequest) { r.Partitionid = ptr.To("mars") }, 400, `partition:mars not found`),
		Entry("unknown network", func(r *models.V1FirewallCreateRequest) {
			r.Networks = append(r.Networks, &models.V1MachineAllocationNetwork{Networkid: ptr.To("nowhere"), Autoacquire: ptr.To(true)})
		}, 404, `no network with id "nowhere" found`),
		Entry("no private network", func(r *models.V1FirewallCreateRequest) { r.Networks = r.Networks[1:] }, 422, "no private network given"),
		Entry("an invalid rule", func(r *models.V1FirewallCreateRequest) {
			r.FirewallRules = &models.V1FirewallRules{Egress: []*models.V1FirewallEgressRule{{Protocol: "tcp", Ports: []int32{70000}, To: []string{"1.2.3.0/24"}}}}
		}, 400, "port is out of range"),
	)

	It("answers 422 when no machine is free, and never allocates one twice", func(ctx SpecContext) {
		for range 10 {
			_, err := edit.Firewall.AllocateFirewall(firewall.NewAllocateFirewallParamsWithContext(ctx).WithBody(allocation(nil)), nil)
			Expect(err).NotTo(HaveOccurred())
		}
		_, err := edit.Firewall.AllocateFirewall(firewall.NewAllocateFirewallParamsWithContext(ctx).WithBody(allocation(nil)), nil)
		err = metalclient.Wrap("allocating", err)
		Expect(metalclient.StatusCode(err)).To(Equal(http.StatusUnprocessableEntity))
		Expect(err).To(MatchError(ContainSubstring("no machine available")))
		Expect(server.Allocated()).To(HaveLen(10))
		server.ExpectNoViolations()
	})

	Describe("authentication, as metal-stack's security package and metal-lib's UserAuth do it", func() {
		It("answers 403 to a wrong HMAC, to none, and to a view key that allocates", func(ctx SpecContext) {
			for _, c := range []*client.MetalAPI{
				newClient(server.URL, "Metal-Edit", "not-the-key"),
				newClient(server.URL, "Metal-Admin", "no-admin-key-is-configured"),
			} {
				_, err := c.Network.FindNetwork(network.NewFindNetworkParamsWithContext(ctx).WithID(metalapi.Internet), nil)
				Expect(metalclient.StatusCode(metalclient.Wrap("finding", err))).To(Equal(http.StatusForbidden), "%v", err)
			}
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, server.URL+"/v1/network/internet", nil)
			Expect(err).NotTo(HaveOccurred())
			resp, err := http.DefaultClient.Do(req)
			Expect(err).NotTo(HaveOccurred())
			_ = resp.Body.Close()
			Expect(resp.StatusCode).To(Equal(http.StatusForbidden), "no HMAC at all")

			view := newClient(server.URL, "Metal-View", metalapi.ViewKey)
			_, err = view.Network.FindNetwork(network.NewFindNetworkParamsWithContext(ctx).WithID(metalapi.Internet), nil)
			Expect(err).NotTo(HaveOccurred(), "a view key reads")
			_, err = view.Firewall.AllocateFirewall(firewall.NewAllocateFirewallParamsWithContext(ctx).WithBody(allocation(nil)), nil)
			err = metalclient.Wrap("allocating", err)
			Expect(metalclient.StatusCode(err)).To(Equal(http.StatusForbidden))
			Expect(err).To(MatchError(ContainSubstring("you are not member in one of")))
			Expect(server.Allocated()).To(BeEmpty())
			server.ExpectNoViolations()
		})
	})

	Describe("the metal-api's error encoding", func() {
		It("answers errors as a JSON string holding statuscode and message", func(ctx SpecContext) {
			view := newClient(server.URL, "Metal-View", metalapi.ViewKey)
			_, err := view.Network.FindNetwork(network.NewFindNetworkParamsWithContext(ctx).WithID("nowhere"), nil)
			Expect(metalclient.Wrap("finding", err)).To(MatchError(`finding: the metal-api answered 404 Not Found: no network with id "nowhere" found`))

			req, err := http.NewRequestWithContext(ctx, http.MethodGet, server.URL+"/v1/network/nowhere", nil)
			Expect(err).NotTo(HaveOccurred())
			resp, err := http.DefaultClient.Do(req)
			Expect(err).NotTo(HaveOccurred())
			body, err := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			Expect(err).NotTo(HaveOccurred())
			var inner string
			Expect(json.Unmarshal(body, &inner)).To(Succeed(), "the body is a JSON string: %s", body)
			Expect(inner).To(MatchJSON(`{"statuscode":403,"message":"you are not member in one of [metal-view metal-edit metal-admin]"}`))
		})

		It("is the only form metal-go decodes: a plain error object loses code and message in metal-go", func(ctx SpecContext) {
			plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusUnprocessableEntity)
				_, _ = w.Write([]byte(`{"statuscode":422,"message":"no machine available"}`))
			}))
			DeferCleanup(plain.Close)
			c := newClient(plain.URL, "Metal-Edit", metalapi.EditKey)
			_, err := c.Firewall.AllocateFirewall(firewall.NewAllocateFirewallParamsWithContext(ctx).WithBody(allocation(nil)), nil)
			Expect(err).To(HaveOccurred())
			Expect(metalclient.StatusCode(metalclient.Wrap("allocating", err))).To(BeZero(), "%v", err)
			Expect(metalclient.Definite(metalclient.Wrap("allocating", err))).To(BeFalse())
		})
	})

	Describe("validation against metal-go's metal-api.json", func() {
		It("takes metal-go's null for an optional array as absent, as metal-go's model validation does", func(ctx SpecContext) {
			_, err := edit.Firewall.FindFirewalls(firewall.NewFindFirewallsParamsWithContext(ctx).WithBody(&models.V1FirewallFindRequest{}), nil)
			Expect(err).NotTo(HaveOccurred())
			_, err = edit.Firewall.AllocateFirewall(firewall.NewAllocateFirewallParamsWithContext(ctx).WithBody(allocation(func(r *models.V1FirewallCreateRequest) { r.Tags, r.DNSServers = nil, nil })), nil)
			Expect(err).NotTo(HaveOccurred())
			server.ExpectNoViolations()
		})

		It("refuses null where the spec requires an array (ssh_pub_keys), as metal-go's model validation does", func(ctx SpecContext) {
			req := allocation(func(r *models.V1FirewallCreateRequest) { r.SSHPubKeys = nil })
			Expect(req.Validate(strfmt.Default)).To(MatchError(ContainSubstring("ssh_pub_keys")), "metal-go's own validation")
			_, _ = edit.Firewall.AllocateFirewall(firewall.NewAllocateFirewallParamsWithContext(ctx).WithBody(req), nil)
			Expect(InterceptGomegaFailures(server.ExpectNoViolations)).To(ConsistOf(And(ContainSubstring("allocateFirewall"), ContainSubstring("/ssh_pub_keys"))))
		})

		It("fails the spec for a request that violates the spec (planted: sizeid is a number)", func(ctx SpecContext) {
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, server.URL+"/v1/firewall/allocate",
				strings.NewReader(`{"sizeid":42,"imageid":"i","partitionid":"p","projectid":"p1","ssh_pub_keys":[],"networks":[]}`))
			Expect(err).NotTo(HaveOccurred())
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			Expect(err).NotTo(HaveOccurred())
			_ = resp.Body.Close()
			failures := InterceptGomegaFailures(server.ExpectNoViolations)
			Expect(failures).To(ConsistOf(And(ContainSubstring("allocateFirewall"), ContainSubstring("sizeid"))), "the check every suite runs fails")
		})

		It("fails the spec for a call of an operation the spec does not have", func(ctx SpecContext) {
			req, err := http.NewRequestWithContext(ctx, http.MethodPut, server.URL+"/v1/firewall/allocate", nil)
			Expect(err).NotTo(HaveOccurred())
			resp, err := http.DefaultClient.Do(req)
			Expect(err).NotTo(HaveOccurred())
			_ = resp.Body.Close()
			Expect(InterceptGomegaFailures(server.ExpectNoViolations)).To(ConsistOf(ContainSubstring("no such operation")))
		})
	})
})
