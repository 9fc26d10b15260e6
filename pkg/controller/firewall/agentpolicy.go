package firewall

import (
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
)

// agentShootPolicy bounds, in the shoot's kube-apiserver, what RBAC cannot:
// whatever RBAC someone binds to the agent's ServiceAccount later, it writes
// no EndpointSlice (a slice redirects a Service: the drop receiver's, where
// the agents send) and gets no token (a stolen shoot credential that mints
// one would outlive its own expiry). Shoots are
// Kubernetes >= 1.32 under Gardener v1.150, so ValidatingAdmissionPolicy is
// GA there.
func agentShootPolicy() []client.Object {
	agent := serviceaccount.MakeUsername(metav1.NamespaceSystem, constants.AgentServiceAccountName)
	return []client.Object{
		&admissionregistrationv1.ValidatingAdmissionPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: constants.AgentShootPolicyName},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
				FailurePolicy: ptr.To(admissionregistrationv1.Fail),
				MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{
					{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
						Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"serviceaccounts/token"}},
					}},
					{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete},
						Rule:       admissionregistrationv1.Rule{APIGroups: []string{"discovery.k8s.io"}, APIVersions: []string{"*"}, Resources: []string{"endpointslices"}},
					}},
				}},
				MatchConditions: []admissionregistrationv1.MatchCondition{{
					Name: "firewall-agent", Expression: fmt.Sprintf("request.userInfo.username == '%s'", agent),
				}},
				Validations: []admissionregistrationv1.Validation{
					{
						Expression: "request.resource.resource != 'serviceaccounts'",
						Message:    "the firewall agent mints no tokens: it sends its shoot credential, which Gardener renews",
					},
					{
						Expression: "request.resource.resource != 'endpointslices'",
						Message:    "the firewall agent writes no EndpointSlices: the extension publishes its metrics address from the seed",
					},
				},
			},
		},
		&admissionregistrationv1.ValidatingAdmissionPolicyBinding{
			ObjectMeta: metav1.ObjectMeta{Name: constants.AgentShootPolicyName},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
				PolicyName:        constants.AgentShootPolicyName,
				ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			},
		},
	}
}
