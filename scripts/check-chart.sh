#!/usr/bin/env bash
# check-chart.sh validates the Helm chart and the deploy/ manifests against a
# real kube-apiserver, offline:
#   1. helm lint --strict, with the default values and each ci/*-values.yaml;
#      values the chart must refuse (an even etcd member count) are refused;
#   2. starts a test API server (envtest: kube-apiserver + etcd) with the
#      CRDs from deploy/crds installed;
#   3. renders the chart with each of those value sets and applies the result
#      with `kubectl apply --server-side --dry-run=server --validate=strict` (schemas,
#      unknown fields, CEL rules, admission) and `helm install
#      --dry-run=server`;
#      Every Sluice container's args are then parsed by the real `sluice`
#      binary (`sluice <args> --help`), so the chart cannot drift from the
#      command's flags;
#   4. secure by default: the default render has TLS on every connection,
#      API keys, NetworkPolicies; the escape hatches turn them off;
#      cert-manager Certificates replace the chart's own when asked; a
#      release's CA, certificates and keys survive a re-render (`lookup`
#      against the test API server) and a certificate near its end is
#      issued again under the same CA;
#   5. the chart's own certificates and keys (Helm's genCA/genSignedCert,
#      the keys file) serve a real secure cluster: etcd with client
#      certificates, a data node, a coordinator, with the chart's flags;
#      the admin key reads health, the operator's key creates an index but
#      cannot manage keys;
#   6. applies deploy/crds, deploy/rbac and deploy/samples the same way, then
#      creates the samples for real and lists them (printer columns).
# Nothing runs pods: the test API server has no scheduler or kubelet.
# The tools come from scripts/k8s-tools.sh (built once, then cached).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
CHART=charts/sluice

eval "$(scripts/k8s-tools.sh envtest helm etcd)"
helm=$SLUICE_HELM

step() { printf '\n== %s\n' "$*" >&2; }

work=$(mktemp -d)
apiserver_pid=""
pids=()
cleanup() {
	local p
	for p in "${pids[@]}" $apiserver_pid; do
		kill "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	rm -rf "$work"
}
trap cleanup EXIT

values_sets=("")
for f in "$CHART"/ci/*-values.yaml; do
	values_sets+=("$f")
done

step "helm lint --strict"
for v in "${values_sets[@]}"; do
	"$helm" lint --strict "$CHART" ${v:+--values "$v"}
done

step "values the chart refuses"
# refused VALUES... MESSAGE: helm template must fail, saying MESSAGE.
refused() {
	local msg=${*: -1} out
	if out=$("$helm" template sluice "$CHART" "${@:1:$#-1}" 2>&1); then
		echo "check-chart: the chart accepted ${*:1:$#-1}" >&2
		exit 1
	fi
	if [[ $out != *"$msg"* ]]; then
		printf 'check-chart: %s refused, but not saying %q:\n%s\n' "${*:1:$#-1}" "$msg" "$out" >&2
		exit 1
	fi
	out=${out#*execution error at }
	echo "   refused ${*:1:$#-1}: ${out%%$'\n'*}" >&2
}
refused --set etcd.replicas=2 "etcd.replicas must be odd (1, 3, 5, ...), not 2"
refused --set etcd.replicas=4 "etcd.replicas must be odd (1, 3, 5, ...), not 4"
refused --set tls.certManager.enabled=true "tls.certManager.enabled needs cert-manager"
refused --set tls.validityDays=30 --set tls.renewBeforeDays=30 "tls.validityDays (30) must exceed tls.renewBeforeDays (30)"
refused --set node.terminationGracePeriodSeconds=40 "must be at least node.shutdownTimeoutSeconds + 30 (60)"

step "the ServiceMonitor only where its CRDs are; the dashboard is valid JSON"
# The test API server has no Prometheus Operator CRDs: a ServiceMonitor is
# rendered only when helm is told the API exists (as it is in a cluster
# that has them), and then checked for what Prometheus needs to scrape.
if "$helm" template sluice "$CHART" | grep -q '^kind: ServiceMonitor'; then
	echo "check-chart: a ServiceMonitor was rendered without the monitoring.coreos.com/v1 API" >&2
	exit 1
fi
sm=$("$helm" template sluice "$CHART" --api-versions monitoring.coreos.com/v1 --show-only templates/monitoring.yaml)
for want in 'kind: ServiceMonitor' 'app.kubernetes.io/component: metrics' '- port: metrics' 'path: /metrics'; do
	if [[ $sm != *"$want"* ]]; then
		printf 'check-chart: the ServiceMonitor lacks %q:\n%s\n' "$want" "$sm" >&2
		exit 1
	fi
done
if "$helm" template sluice "$CHART" --api-versions monitoring.coreos.com/v1 --set metrics.serviceMonitor.enabled=false | grep -q '^kind: ServiceMonitor'; then
	echo "check-chart: metrics.serviceMonitor.enabled=false still made a ServiceMonitor" >&2
	exit 1
fi
python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); assert d["panels"], "no panels"' "$CHART/dashboards/sluice.json"
echo "   ServiceMonitor rendered only with monitoring.coreos.com/v1; dashboards/sluice.json parses" >&2

step "the data nodes' PodDisruptionBudget"
# One data node down at a time during drains and upgrades: with replicas >= 1
# every shard keeps a copy (docs/replication.md, "Rolling restarts").
pdb=$("$helm" template sluice "$CHART" --show-only templates/node.yaml |
	python3 -c 'import sys, yaml
docs = [d for d in yaml.safe_load_all(sys.stdin) if d and d["kind"] == "PodDisruptionBudget"]
assert len(docs) == 1, f"{len(docs)} PodDisruptionBudgets"
spec = docs[0]["spec"]
assert spec.get("maxUnavailable") == 1 and "minAvailable" not in spec, spec
assert spec["selector"]["matchLabels"]["app.kubernetes.io/component"] == "node", spec
print(docs[0]["metadata"]["name"])') || {
	echo "check-chart: the data nodes' PodDisruptionBudget is missing or not maxUnavailable 1" >&2
	exit 1
}
echo "   $pdb: maxUnavailable 1 over the data node pods" >&2

step "the data nodes' rolling restart"
# One pod at a time, the next only once the new one is Ready, which a data
# node is once its copies have recovered (the health service
# sluice.node.ready); SIGTERM hands its primaries off within
# --shutdown-timeout, which the grace period must cover
# (docs/operations.md, "Rolling restarts and upgrades").
"$helm" template sluice "$CHART" --show-only templates/node.yaml |
	python3 -c 'import sys, yaml
sts = [d for d in yaml.safe_load_all(sys.stdin) if d and d["kind"] == "StatefulSet"]
assert len(sts) == 1, f"{len(sts)} StatefulSets"
spec = sts[0]["spec"]
assert spec["updateStrategy"]["type"] == "RollingUpdate", spec["updateStrategy"]
assert spec["updateStrategy"].get("rollingUpdate", {}).get("maxUnavailable", 1) == 1, spec["updateStrategy"]
pod = spec["template"]["spec"]
c = pod["containers"][0]
assert c["readinessProbe"]["grpc"].get("service") == "sluice.node.ready", c["readinessProbe"]
for p in ("startupProbe", "livenessProbe"):
	assert "service" not in c[p]["grpc"], (p, c[p])
timeouts = [a.split("=", 1)[1] for a in c["args"] if a.startswith("--shutdown-timeout=")]
assert len(timeouts) == 1 and timeouts[0].endswith("s"), c["args"]
grace = pod["terminationGracePeriodSeconds"]
assert grace >= int(timeouts[0][:-1]) + 30, (grace, timeouts)
print(f"   RollingUpdate one at a time; ready on sluice.node.ready; --shutdown-timeout={timeouts[0]} within a grace of {grace}s")' >&2 || {
	echo "check-chart: the data nodes' StatefulSet does not roll one recovered node at a time" >&2
	exit 1
}

step "the data nodes' scale-down drain (preStop)"
# On a scale-down the preStop hook drains a removed pod's node, and returns at
# once on a restart (it reads its StatefulSet's replicas): the hook runs
# `sluice node prestop` for this StatefulSet, within what the grace period
# leaves after SIGTERM's hand-off and commits; the pod's account is its own
# (with a token), the others' stay token-less. Off, there is no hook and no
# token (docs/operations.md, "Scaling data nodes down").
prestop_check='import sys, yaml
on = sys.argv[1] == "on"
docs = [d for d in yaml.safe_load_all(sys.stdin) if d]
sts = [d for d in docs if d["kind"] == "StatefulSet"][0]
pod = sts["spec"]["template"]["spec"]
c = pod["containers"][0]
if not on:
	assert "lifecycle" not in c, c["lifecycle"]
	assert pod["automountServiceAccountToken"] is False, pod
	assert not [d for d in docs if d["kind"] in ("Role", "RoleBinding", "ServiceAccount")], "RBAC without the hook"
	print("   node.scaleDown.drain=false: no preStop hook, no token")
	sys.exit(0)
cmd = c["lifecycle"]["preStop"]["exec"]["command"]
assert cmd[:3] == ["/usr/local/bin/sluice", "node", "prestop"], cmd
flags = dict(a[2:].split("=", 1) for a in cmd[3:])
assert flags["statefulset"] == sts["metadata"]["name"], flags
assert flags["data-dir"] == "/var/lib/sluice" and flags["log-file"] == "/proc/1/fd/2", flags
args = dict(a[2:].split("=", 1) for a in c["args"][1:] if a.startswith("--") and "=" in a)
for f in ("etcd", "etcd-prefix", "cert-file", "key-file", "trusted-ca-file"):
	assert flags.get(f) == args.get(f), (f, flags.get(f), args.get(f))
grace = pod["terminationGracePeriodSeconds"]
shutdown = int(args["shutdown-timeout"][:-1])
assert flags["timeout"] == f"{grace - shutdown - 30}s", (flags["timeout"], grace, shutdown)
assert pod["serviceAccountName"] == sts["metadata"]["name"] and pod["automountServiceAccountToken"] is True, pod
role = [d for d in docs if d["kind"] == "Role"][0]
assert role["rules"] == [{"apiGroups": ["apps"], "resources": ["statefulsets"], "resourceNames": [sts["metadata"]["name"]], "verbs": ["get"]}], role["rules"]
name, timeout = flags["statefulset"], flags["timeout"]
print(f"   preStop: sluice node prestop --statefulset={name} --timeout={timeout} (grace {grace}s - shutdown {shutdown}s - 30s); Role: get its StatefulSet only")'
"$helm" template sluice "$CHART" --show-only templates/node.yaml | python3 -c "$prestop_check" on >&2 ||
	{ echo "check-chart: the data nodes' preStop hook is not the scale-down drain" >&2; exit 1; }
"$helm" template sluice "$CHART" --show-only templates/node.yaml --set node.scaleDown.drain=false | python3 -c "$prestop_check" off >&2 ||
	{ echo "check-chart: node.scaleDown.drain=false still drains" >&2; exit 1; }
for other in coordinator etcd; do
	"$helm" template sluice "$CHART" --show-only "templates/$other.yaml" | grep -q 'automountServiceAccountToken: false' ||
		{ echo "check-chart: $other pods get a service account token" >&2; exit 1; }
done

step "building the test API server and sluice"
go build -o "$work/apiserver" ./operator/crdtest/apiserver
go build -o "$work/sluice" ./cmd/sluice

step "starting the test API server"
"$work/apiserver" --write-kubeconfig "$work/kubeconfig" >"$work/apiserver.log" 2>&1 &
apiserver_pid=$!
for ((i = 0; i < 120; i++)); do
	[[ -f $work/kubeconfig ]] && break
	if ! kill -0 "$apiserver_pid" 2>/dev/null; then
		cat "$work/apiserver.log" >&2
		echo "check-chart: the test API server exited" >&2
		exit 1
	fi
	sleep 0.5
done
if [[ ! -f $work/kubeconfig ]]; then
	cat "$work/apiserver.log" >&2
	echo "check-chart: the test API server did not start in 60s" >&2
	exit 1
fi
export KUBECONFIG=$work/kubeconfig
kubectl() { "$SLUICE_KUBECTL" "$@"; }
dry_apply() { kubectl apply --server-side --dry-run=server --validate=strict "$@"; }

# check_args FILE: runs `sluice <args> --help` for every container of FILE
# that runs the sluice image (not etcd), which fails on an unknown flag or a
# malformed value without starting anything.
check_args() {
	local line image args
	# One line per container: image, then the args, tab-separated.
	local tmpl='{{define "c"}}{{range .}}{{.image}}{{"\t"}}{{range .args}}{{.}}{{"\t"}}{{end}}{{"\n"}}{{end}}{{end}}'
	tmpl+='{{with .spec}}{{with .template}}{{template "c" .spec.containers}}{{end}}{{with .containers}}{{template "c" .}}{{end}}'
	tmpl+='{{with .jobTemplate}}{{template "c" .spec.template.spec.containers}}{{end}}{{end}}'
	kubectl create --dry-run=client -f "$1" -o go-template="$tmpl" |
		while IFS= read -r line; do
			IFS=$'\t' read -r -a args <<<"$line"
			image=${args[0]}
			args=("${args[@]:1}")
			[[ $image == *etcd* ]] && continue
			echo "   sluice ${args[*]}" >&2
			if ! "$work/sluice" "${args[@]}" --help >/dev/null; then
				echo "check-chart: the chart passes flags that sluice ${args[0]} does not take" >&2
				return 1
			fi
		done
}

step "chart: render and apply (server dry-run)"
for v in "${values_sets[@]}"; do
	name=${v:-default}
	name=$(basename "$name" -values.yaml)
	ns=check-$name
	kubectl create namespace "$ns" >/dev/null
	out=$work/$name.yaml
	"$helm" template sluice "$CHART" --namespace "$ns" --include-crds ${v:+--values "$v"} >"$out"
	echo "-- $name: $(grep -c '^kind:' "$out") objects" >&2
	dry_apply --namespace "$ns" -f "$out"
	check_args "$out"
	"$helm" install sluice "$CHART" --namespace "$ns" --dry-run=server ${v:+--values "$v"} >/dev/null
done

step "chart: the data nodes' preStop hook, as their account"
# The rendered StatefulSet and its account, applied for real (no pod runs);
# the account may get that StatefulSet and nothing else; the hook's own
# command, run by the real binary with a token of that account, finds a pod
# whose ordinal the StatefulSet counts restarting and returns without
# touching etcd (whose certificates are not here).
ns=check-prestop
kubectl create namespace "$ns" >/dev/null
f=$work/prestop.yaml
"$helm" template sluice "$CHART" --namespace "$ns" --show-only templates/node.yaml >"$f"
kubectl apply --server-side --namespace "$ns" -f "$f" >/dev/null
# account_can NS ACCOUNT "yes|no VERB WHAT"...: the ServiceAccount may do
# exactly what is marked yes of what is listed.
account_can() {
	local ns=$1 account=$2 check want verb what got
	shift 2
	for check in "$@"; do
		read -r want verb what <<<"$check"
		got=$(kubectl auth can-i --namespace "$ns" --as "system:serviceaccount:$ns:$account" "$verb" "$what" 2>/dev/null || true)
		[[ $got == "$want" ]] || { echo "check-chart: account $account: can-i $verb $what = $got, want $want" >&2; return 1; }
	done
}
account_can "$ns" sluice-node "yes get statefulset/sluice-node" "no get statefulset/sluice-etcd" "no list statefulsets" \
	"no update statefulset/sluice-node" "no patch statefulset/sluice-node" "no get pods" "no get secrets"
hook=$(kubectl create --dry-run=client -f "$f" -o go-template='{{if eq .kind "StatefulSet"}}{{range (index .spec.template.spec.containers 0).lifecycle.preStop.exec.command}}{{.}}{{"\t"}}{{end}}{{end}}')
IFS=$'\t' read -r -a hook <<<"$hook"
token=$(kubectl create token sluice-node --namespace "$ns")
server=$(kubectl config view --minify -o go-template='{{(index .clusters 0).cluster.server}}')
kubectl config view --minify --raw >"$work/node-kubeconfig"
KUBECONFIG=$work/node-kubeconfig kubectl config set-credentials sluice-node --token="$token" >/dev/null
KUBECONFIG=$work/node-kubeconfig kubectl config set-context --current --user=sluice-node >/dev/null
out=$(POD_NAME=sluice-node-0 "$work/sluice" "${hook[@]:1}" --kubeconfig "$work/node-kubeconfig" --log-file "" 2>&1) ||
	{ echo "check-chart: the preStop hook failed on a restart: $out" >&2; exit 1; }
[[ $out == *"not leaving, not draining"* && $out == *"ordinal 0 is within"* ]] ||
	{ echo "check-chart: the preStop hook on a restart: $out" >&2; exit 1; }
echo "   data nodes' account: get statefulset/sluice-node, nothing else; the hook as that account ($server): ${out##*why=}" >&2

# has FILE TEXT...: every TEXT is in FILE; lacks FILE TEXT...: none is.
has() {
	local f=$1 t
	shift
	for t in "$@"; do
		grep -qF -- "$t" "$f" || { echo "check-chart: $(basename "$f") lacks: $t" >&2; return 1; }
	done
}
lacks() {
	local f=$1 t
	shift
	for t in "$@"; do
		if grep -qF -- "$t" "$f"; then echo "check-chart: $(basename "$f") has: $t" >&2; return 1; fi
	done
}
# secret FILE NAME KEY: a Secret's value (decoded) from rendered FILE.
secret() {
	kubectl create --dry-run=client -f "$1" -o go-template="{{if eq .metadata.name \"$2\"}}{{index .data \"$3\"}}{{end}}" | base64 -d
}

step "chart: secure by default, and its escape hatches"
out=$work/default.yaml
has "$out" "kind: NetworkPolicy" "name: sluice-ca" "name: sluice-tls" "name: sluice-etcd-tls" \
	"name: sluice-admin-api-key" "name: sluice-operator-api-key" "name: sluice-auth-keys" \
	"--etcd=https://" "--cert-file=/etc/sluice/tls/tls.crt" "--auth-keys-file=/etc/sluice/auth/keys.json" \
	"--listen-client-urls=https://" "--client-cert-auth" "--peer-client-cert-auth" "name: SLUICE_API_KEY" \
	"kind: CronJob" "--ca-secret=sluice-ca" "--secret=sluice-tls" "--secret=sluice-etcd-tls"
# The keys file holds the SHA-256 of each key's secret, never the secret.
keys=$(secret "$out" sluice-auth-keys keys.json)
for k in admin operator; do
	s=$(secret "$out" "sluice-$k-api-key" secret)
	[[ $keys == *"$(printf %s "$s" | sha256sum | cut -d' ' -f1)"* && $keys != *"$s"* ]] ||
		{ echo "check-chart: keys.json does not hold the hash (alone) of the $k key: $keys" >&2; exit 1; }
done
[[ $keys == *'"*:manage,monitor,read,write"'* && $keys != *'"admin":true'* ]] ||
	{ echo "check-chart: the operator's role is not manage/monitor/read/write: $keys" >&2; exit 1; }
echo "   default: TLS, API keys (hashes in keys.json), NetworkPolicies" >&2
for hatch in "tls.enabled=false" "auth.enabled=false" "networkPolicy.enabled=false" "tls.renewal.enabled=false"; do
	f=$work/hatch.yaml
	"$helm" template sluice "$CHART" --set "$hatch" >"$f"
	case $hatch in
	tls.renewal.*) has "$f" "name: sluice-tls" && lacks "$f" "kind: CronJob" ;;
	tls.*) lacks "$f" "https://" "--cert-file" "name: sluice-tls" "kind: Certificate" "SLUICE_API_KEY" "--auth-keys-file" "kind: CronJob" ;;
	auth.*) has "$f" "--cert-file" "--auth=false" && lacks "$f" "--auth-keys-file" "api-key" "SLUICE_API_KEY" ;;
	networkPolicy.*) lacks "$f" "kind: NetworkPolicy" ;;
	esac
	echo "   $hatch: off" >&2
done
f=$work/cert-manager.yaml
"$helm" template sluice "$CHART" --set tls.certManager.enabled=true --api-versions cert-manager.io/v1 >"$f"
has "$f" "kind: Certificate" "kind: Issuer" "organizations: [sluice-cluster]" "isCA: true" "--cert-file"
lacks "$f" "kind: CronJob"
[[ $(grep -c '^kind: Secret' "$f") == 3 ]] || { echo "check-chart: with cert-manager the chart still makes certificate Secrets" >&2; exit 1; }
"$helm" template sluice "$CHART" --set tls.certManager.enabled=true --set tls.certManager.issuerRef.name=corp-ca \
	--set tls.certManager.issuerRef.kind=ClusterIssuer --api-versions cert-manager.io/v1 >"$f"
has "$f" "name: corp-ca" "kind: ClusterIssuer" && lacks "$f" "selfSigned"
echo "   tls.certManager: Certificates (self-signed CA, or the given issuer) instead of the chart's" >&2

step "chart: CA, certificates and keys kept across upgrades; renewed near their end"
ns=check-keep
kubectl create namespace "$ns" >/dev/null
first=$work/first.yaml second=$work/second.yaml
"$helm" template sluice "$CHART" --namespace "$ns" --show-only templates/tls.yaml --show-only templates/auth.yaml >"$first"
# The node/coordinator certificate ends within renewBeforeDays: due.
sed -i '/name: sluice-tls$/,/sluice.dev\/not-after/ s/sluice.dev\/not-after: .*/sluice.dev\/not-after: "1"/' "$first"
kubectl apply --server-side --namespace "$ns" -f "$first" >/dev/null
"$helm" template sluice "$CHART" --namespace "$ns" --dry-run=server --show-only templates/tls.yaml --show-only templates/auth.yaml >"$second"
for kept in "sluice-ca tls.crt" "sluice-ca tls.key" "sluice-etcd-tls tls.crt" "sluice-admin-api-key apiKey" "sluice-operator-api-key apiKey" "sluice-auth-keys keys.json"; do
	read -r name key <<<"$kept"
	[[ $(secret "$first" "$name" "$key" | sha256sum) == $(secret "$second" "$name" "$key" | sha256sum) ]] ||
		{ echo "check-chart: $name $key changed on re-render" >&2; exit 1; }
done
[[ $(secret "$first" sluice-tls tls.crt | sha256sum) != $(secret "$second" sluice-tls tls.crt | sha256sum) ]] ||
	{ echo "check-chart: a certificate at its end was not issued again" >&2; exit 1; }
echo "   kept: CA, etcd certificate, API keys, keys file; issued again: the certificate due for renewal" >&2

step "chart: the renewal CronJob renews certificates near their end; helm upgrade keeps them"
# The CronJob's own args, run by the real binary against the test API
# server: first nothing is due (valid 30 days, renewed within 20); then,
# told to renew within 40 (for 50 days), both certificates are issued again by the same
# CA with the same names, and a re-render (lookup) keeps them.
ns=check-renew
kubectl create namespace "$ns" >/dev/null
vals=(--set tls.validityDays=30 --set tls.renewBeforeDays=20)
before=$work/renew-before.yaml rerender=$work/renew-rerender.yaml
"$helm" template sluice "$CHART" --namespace "$ns" "${vals[@]}" --show-only templates/tls.yaml --show-only templates/cert-renewal.yaml >"$before"
kubectl apply --server-side --namespace "$ns" -f "$before" >/dev/null
account_can "$ns" sluice-cert-renewal "yes get secret/sluice-ca" "yes update secret/sluice-tls" "yes update secret/sluice-etcd-tls" \
	"no update secret/sluice-ca" "no get secret/sluice-admin-api-key" "no list secrets" "no create secrets"
renew_args=$(kubectl create --dry-run=client -f "$before" -o go-template='{{if eq .kind "CronJob"}}{{range (index .spec.jobTemplate.spec.template.spec.containers 0).args}}{{.}} {{end}}{{end}}')
read -r -a renew_args <<<"$renew_args"
cert_of() { kubectl get secret --namespace "$ns" "$1" -o go-template="{{index .data \"$2\"}}" | base64 -d; }
sha_of() { cert_of "$1" "$2" | sha256sum; }
first_tls=$(sha_of sluice-tls tls.crt) first_etcd=$(sha_of sluice-etcd-tls tls.crt)
names_of() { cert_of "$1" tls.crt | openssl x509 -noout -subject -ext subjectAltName; }
first_names=$(names_of sluice-tls; names_of sluice-etcd-tls)
out1=$("$work/sluice" "${renew_args[@]}")
[[ $(sha_of sluice-tls tls.crt) == "$first_tls" && $out1 == *"sluice-tls: kept"* ]] ||
	{ echo "check-chart: a certificate not due was renewed: $out1" >&2; exit 1; }
out2=$("$work/sluice" "${renew_args[@]}" --renew-before-days=40 --validity-days=50)
[[ $out2 == *"sluice-tls: renewed"* && $out2 == *"sluice-etcd-tls: renewed"* ]] ||
	{ echo "check-chart: certificates due were not renewed: $out2" >&2; exit 1; }
[[ $(sha_of sluice-tls tls.crt) != "$first_tls" && $(sha_of sluice-etcd-tls tls.crt) != "$first_etcd" ]] ||
	{ echo "check-chart: the Secrets still hold the old certificates" >&2; exit 1; }
for s in sluice-tls sluice-etcd-tls; do
	cert_of sluice-ca tls.crt >"$work/renew-ca.crt"
	cert_of "$s" tls.crt >"$work/renew-leaf.crt"
	openssl verify -CAfile "$work/renew-ca.crt" "$work/renew-leaf.crt" >/dev/null ||
		{ echo "check-chart: the renewed $s certificate is not of the chart's CA" >&2; exit 1; }
	[[ $(cert_of "$s" ca.crt | sha256sum) == $(sha256sum <"$work/renew-ca.crt") ]] ||
		{ echo "check-chart: the renewed $s ca.crt is not the chart's CA" >&2; exit 1; }
done
[[ $(names_of sluice-tls; names_of sluice-etcd-tls) == "$first_names" ]] ||
	{ printf 'check-chart: renewed certificates changed names:\n%s\nwere:\n%s\n' "$(names_of sluice-tls; names_of sluice-etcd-tls)" "$first_names" >&2; exit 1; }
renewed_tls=$(sha_of sluice-tls tls.crt)
"$helm" template sluice "$CHART" --namespace "$ns" "${vals[@]}" --dry-run=server --show-only templates/tls.yaml >"$rerender"
[[ $(secret "$rerender" sluice-tls tls.crt | sha256sum) == "$renewed_tls" ]] ||
	{ echo "check-chart: helm upgrade would replace the renewed certificate" >&2; exit 1; }
echo "   renewal account: get the CA, update the two certificate Secrets, nothing else" >&2
echo "   sluice tls renew: kept when not due; renewed when due (same CA, same names); a re-render keeps the renewed one" >&2

step "chart: its certificates and keys serve a real secure cluster"
d=$work/secure
mkdir -p "$d/tls" "$d/etcd" "$d/auth"
out=$work/default.yaml
for k in ca.crt tls.crt tls.key; do
	secret "$out" sluice-tls "$k" >"$d/tls/$k"
	secret "$out" sluice-etcd-tls "$k" >"$d/etcd/$k"
done
secret "$out" sluice-auth-keys keys.json >"$d/auth/keys.json"
port() { echo $((20000 + RANDOM % 30000)); }
ec=$(port) ep=$(port) np=$(port) nh=$(port) cp=$(port)
"$SLUICE_ETCD" --name m0 --data-dir "$d/etcd-data" \
	--listen-client-urls "https://127.0.0.1:$ec" --advertise-client-urls "https://127.0.0.1:$ec" \
	--listen-peer-urls "https://127.0.0.1:$ep" --initial-advertise-peer-urls "https://127.0.0.1:$ep" \
	--initial-cluster "m0=https://127.0.0.1:$ep" \
	$(grep -oE -- '--(peer-)?((cert-file|key-file|trusted-ca-file)=/etc/etcd/tls/.*|client-cert-auth$)' "$out" | sort -u | sed "s#/etc/etcd/tls#$d/etcd#") \
	>"$d/etcd.log" 2>&1 &
pids+=($!)
tlsflags=(--cert-file "$d/tls/tls.crt" --key-file "$d/tls/tls.key" --trusted-ca-file "$d/tls/ca.crt")
"$work/sluice" node --etcd "https://127.0.0.1:$ec" --listen "127.0.0.1:$np" --data-dir "$d/node" --health-listen "127.0.0.1:$nh" \
	"${tlsflags[@]}" >"$d/node.log" 2>&1 &
pids+=($!)
"$work/sluice" coordinator --etcd "https://127.0.0.1:$ec" --listen "127.0.0.1:$cp" "${tlsflags[@]}" \
	--auth-keys-file "$d/auth/keys.json" >"$d/coordinator.log" 2>&1 &
pids+=($!)
as() { SLUICE_CACERT=$d/tls/ca.crt SLUICE_API_KEY=$(secret "$out" "sluice-$1-api-key" apiKey) "$work/sluice" "${@:2}" --addr "127.0.0.1:$cp"; }
up=""
for ((i = 0; i < 60; i++)); do
	if as admin health --wait-for green --wait-timeout 5s >/dev/null 2>&1; then up=1; break; fi
	sleep 0.5
done
if [[ -z $up ]]; then
	tail -n 20 "$d"/*.log >&2
	echo "check-chart: a cluster on the chart's certificates did not come up" >&2
	exit 1
fi
as operator index create chart-made --shards 1 >/dev/null
as admin health --wait-for green --wait-timeout 30s >/dev/null || { tail -n 20 "$d"/*.log >&2; exit 1; }
# Writes and searches go coordinator -> data node: mutual TLS on the
# chart's Organization-less certificates.
echo '{"id": "1", "title": "made by the chart"}' >"$d/doc.jsonl"
as operator bulk "$d/doc.jsonl" --index chart-made --refresh wait_for >/dev/null
[[ $(as operator search chart-made 'title:chart') == *"made by the chart"* ]] ||
	{ tail -n 20 "$d"/*.log >&2; echo "check-chart: the document written is not found" >&2; exit 1; }
if err=$(as operator auth list-keys 2>&1); then
	echo "check-chart: the operator's key manages API keys" >&2
	exit 1
fi
[[ $err == *PermissionDenied* || $err == *"PERMISSION_DENIED"* || $err == *admin* ]] || { echo "check-chart: operator list-keys: $err" >&2; exit 1; }
echo "   etcd (client certificates), a data node (cluster certificates only) and a coordinator (keys file) on the chart's material:" >&2
echo "   the admin key reads health; the operator's key creates, writes and searches an index; it cannot list keys ($err)" >&2
for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
pids=()

step "deploy/: CRDs, RBAC, samples (server dry-run)"
dry_apply -f deploy/crds
# The RBAC objects live in sluice-system; a dry run does not create the
# namespace, so create it for real first.
kubectl create namespace sluice-system >/dev/null
dry_apply -f deploy/rbac
kubectl create namespace samples >/dev/null
dry_apply --namespace samples -f deploy/samples

step "deploy/samples: create and list"
kubectl apply --server-side --namespace samples -f deploy/samples
kubectl get --namespace samples sluice -o wide

echo "check-chart: OK" >&2
