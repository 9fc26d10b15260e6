package providerfirewall_test

import admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

func admissionregistrationClientConfig() admissionregistrationv1.WebhookClientConfig {
	url := "https://localhost/webhooks/firewalldeployment"
	return admissionregistrationv1.WebhookClientConfig{URL: &url}
}
