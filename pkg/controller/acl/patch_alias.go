package acl

import istioapinetworkingv1alpha3 "istio.io/api/networking/v1alpha3"

type istioapinetworkingPatch = istioapinetworkingv1alpha3.EnvoyFilter_EnvoyConfigObjectPatch
