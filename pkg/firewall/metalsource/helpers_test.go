package metalsource_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"regexp"
	"strconv"

	"github.com/metal-stack/metal-go/api/client/firewall"
	"github.com/metal-stack/metal-go/api/models"
	"k8s.io/utils/ptr"

	"github.com/metal-firewall/gardener-extension-firewall/test/metalapi"
)

func metalapiAllocate(ctx context.Context, name string, rules *models.V1FirewallRules) *firewall.AllocateFirewallParams {
	return firewall.NewAllocateFirewallParamsWithContext(ctx).WithBody(&models.V1FirewallCreateRequest{
		Name: name, Hostname: name,
		Sizeid: ptr.To(metalapi.Size), Imageid: ptr.To(metalapi.Image), Partitionid: ptr.To("partition-a"), Projectid: ptr.To(project), SSHPubKeys: []string{},
		Networks: []*models.V1MachineAllocationNetwork{
			{Networkid: ptr.To(metalapi.PrivateNetwork(project)), Autoacquire: ptr.To(true)},
			{Networkid: ptr.To(metalapi.Internet), Autoacquire: ptr.To(true)},
		},
		FirewallRules: rules,
		UserData:      base64.StdEncoding.EncodeToString([]byte(`{"ignition":{"version":"3.5.0"}}`)),
	})
}

// sameChanged answers as the metal-api does, but every machine's `changed`
// is one fixed time: changes within one millisecond.
type sameChanged struct{}

var changedField = regexp.MustCompile(`"changed":\s*"[^"]*"`)

func (sameChanged) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return nil, err
	}
	body = changedField.ReplaceAll(body, []byte(`"changed":"2026-01-01T00:00:00.000Z"`))
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
	return resp, nil
}
