#!/usr/bin/env bash
# make-dev-certs.sh — development certificates for RemoteSupport (TLS 1.3, ALPN "rsup/1").
#
# Makes a development CA, a supporter (TLS server) certificate and a device
# (TLS client) certificate, all signed by that CA, and prints each
# certificate's SHA-256 SPKI pin. Needs only bash and the openssl CLI (3.0+).
# See certs/README.md. FOR DEVELOPMENT ONLY: never commit the keys it writes.

set -euo pipefail

prog=${0##*/}

usage() {
    cat <<EOF
usage: $prog [--out DIR] [--days N] [--key ec|rsa] [--force] [extra SAN ...]

Makes, in DIR (default ./dev-certs):
  ca.pem, ca.key                 development CA (self-signed)
  supporter.pem, supporter.key   supporter node certificate (serverAuth), signed by the CA
                                 SANs: DNS:localhost, IP:127.0.0.1, IP:::1 + each extra SAN
  device.pem, device.key         device node client certificate (clientAuth), signed by the CA
and prints each certificate's SHA-256 SPKI pin as sha256/<base64> and as hex.

options:
  --out DIR     output folder (created if missing; default ./dev-certs)
  --days N      validity in days for every certificate (default 365)
  --key ec|rsa  key type: ec = EC P-256 / prime256v1 (default), rsa = RSA 3072
  --force       overwrite an existing CA (and the other files) in DIR
  -h, --help    print this help and exit
  --            end of options; everything after is an extra SAN

Each extra SAN that parses as an IPv4 or IPv6 address is added as IP:<addr>,
anything else as DNS:<name>.

Keys are written with mode 0600. Exit status: 0 ok, 1 failure, 2 bad usage.
EOF
}

die()       { echo "$prog: error: $*" >&2; exit 1; }
usage_err() { echo "$prog: $*" >&2; echo "Try '$prog --help'." >&2; exit 2; }

# ---------------------------------------------------------------- arguments
out=./dev-certs
days=365
keytype=ec
force=0
extra_sans=()

need_value() { [[ $# -ge 2 && -n "$2" ]] || usage_err "option $1 needs a value"; }

while [[ $# -gt 0 ]]; do
    case "$1" in
        -h|--help)  usage; exit 0 ;;
        --out)      need_value "$@"; out=$2; shift 2 ;;
        --out=*)    out=${1#*=}; [[ -n $out ]] || usage_err "option --out needs a value"; shift ;;
        --days)     need_value "$@"; days=$2; shift 2 ;;
        --days=*)   days=${1#*=}; shift ;;
        --key)      need_value "$@"; keytype=$2; shift 2 ;;
        --key=*)    keytype=${1#*=}; shift ;;
        --force)    force=1; shift ;;
        --)         shift; extra_sans+=("$@"); break ;;
        -*)         usage_err "unknown option: $1" ;;
        *)          extra_sans+=("$1"); shift ;;
    esac
done

[[ $days =~ ^[0-9]+$ ]] && (( 10#$days >= 1 && 10#$days <= 36500 )) \
    || usage_err "--days must be a whole number from 1 to 36500 (got '$days')"
days=$((10#$days))
case "$keytype" in
    ec|rsa) ;;
    *) usage_err "--key must be 'ec' or 'rsa' (got '$keytype')" ;;
esac

# ---------------------------------------------------------------- SANs
is_ipv4() {
    local ip=$1 o
    [[ $ip =~ ^([0-9]{1,3})\.([0-9]{1,3})\.([0-9]{1,3})\.([0-9]{1,3})$ ]] || return 1
    for o in "${BASH_REMATCH[@]:1}"; do
        (( 10#$o <= 255 )) || return 1
    done
}

is_ipv6() {
    local ip=$1 head tail groups g n=0
    [[ $ip == *:* && $ip =~ ^[0-9A-Fa-f:.]+$ ]] || return 1
    # An embedded IPv4 tail (::ffff:1.2.3.4) counts as two groups.
    if [[ $ip == *.* ]]; then
        tail=${ip##*:}
        is_ipv4 "$tail" || return 1
        ip=${ip%:*}:0:0
    fi
    [[ $ip != *:::* ]] || return 1
    if [[ $ip == *::* ]]; then
        head=${ip%%::*}; tail=${ip#*::}
        [[ $tail != *::* ]] || return 1            # at most one '::'
        groups="$head:$tail"
    else
        groups=$ip
        [[ $ip != :* && $ip != *: ]] || return 1
    fi
    local IFS=:
    for g in $groups; do
        [[ -z $g ]] && continue
        [[ $g =~ ^[0-9A-Fa-f]{1,4}$ ]] || return 1
        n=$((n + 1))
    done
    if [[ $ip == *::* ]]; then (( n <= 7 )); else (( n == 8 )); fi
}

sans=("DNS:localhost" "IP:127.0.0.1" "IP:::1")
for s in "${extra_sans[@]+"${extra_sans[@]}"}"; do
    if is_ipv4 "$s" || is_ipv6 "$s"; then
        sans+=("IP:$s")
    elif [[ $s =~ ^[0-9.]+$ ]]; then
        usage_err "extra SAN '$s' looks like an IPv4 address but is not a valid one"
    elif [[ $s =~ ^(\*\.)?[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?$ ]]; then
        sans+=("DNS:$s")
    else
        usage_err "extra SAN '$s' is neither an IP address nor a valid DNS name"
    fi
done
san_line=$(IFS=,; echo "${sans[*]}")

# ---------------------------------------------------------------- checks
command -v openssl >/dev/null 2>&1 || die "openssl not found in PATH"
ossl_ver=$(openssl version 2>/dev/null || true)
[[ $ossl_ver =~ ^OpenSSL\ ([0-9]+) ]] && (( BASH_REMATCH[1] >= 3 )) \
    || die "OpenSSL 3.0 or newer is needed (found: ${ossl_ver:-nothing})"

if [[ -e $out && ! -d $out ]]; then
    die "'$out' exists and is not a directory"
fi
if [[ $force -eq 0 && ( -e $out/ca.pem || -e $out/ca.key ) ]]; then
    die "a CA already exists in '$out' (ca.pem/ca.key); refusing to overwrite it (use --force to replace everything)"
fi
mkdir -p -- "$out" || die "cannot create '$out'"
[[ -w $out ]] || die "'$out' is not writable"

umask 077
work=$(mktemp -d "$out/.make-dev-certs.XXXXXX") || die "cannot make a temporary folder in '$out'"
trap 'rm -rf -- "$work"' EXIT

# Run openssl quietly; on failure show what it said and stop.
ossl() {
    local log
    if ! log=$(openssl "$@" 2>&1); then
        echo "$prog: error: 'openssl $1' failed:" >&2
        printf '%s\n' "$log" | sed 's/^/  /' >&2
        exit 1
    fi
}

genkey() {  # genkey FILE
    if [[ $keytype == ec ]]; then
        ossl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:prime256v1 -pkeyopt ec_param_enc:named_curve -out "$1"
    else
        ossl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:3072 -out "$1"
    fi
}

serial() { echo "0x$(openssl rand -hex 16 | sed 's/^./4/')"; }  # positive 128-bit serial

if [[ $keytype == ec ]]; then
    leaf_ku="critical,digitalSignature"
else
    leaf_ku="critical,digitalSignature,keyEncipherment"
fi

cat >"$work/ext.cnf" <<EOF
[ca_ext]
basicConstraints = critical,CA:TRUE,pathlen:0
keyUsage = critical,keyCertSign,cRLSign
subjectKeyIdentifier = hash

[supporter_ext]
basicConstraints = critical,CA:FALSE
keyUsage = $leaf_ku
extendedKeyUsage = serverAuth
subjectAltName = $san_line
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid:always

[device_ext]
basicConstraints = critical,CA:FALSE
keyUsage = $leaf_ku
extendedKeyUsage = clientAuth
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid:always
EOF

# ---------------------------------------------------------------- CA
genkey "$work/ca.key"
ossl req -new -x509 -key "$work/ca.key" -sha256 -days "$days" -set_serial "$(serial)" \
    -subj "/O=RemoteSupport Development/CN=RemoteSupport Dev CA" \
    -config "$work/ext.cnf" -extensions ca_ext -out "$work/ca.pem"

# ---------------------------------------------------------------- leaves
issue() {  # issue NAME SUBJECT EXTSECTION
    local name=$1 subj=$2 ext=$3
    genkey "$work/$name.key"
    ossl req -new -key "$work/$name.key" -subj "$subj" -config "$work/ext.cnf" -out "$work/$name.csr"
    ossl x509 -req -in "$work/$name.csr" -CA "$work/ca.pem" -CAkey "$work/ca.key" \
        -set_serial "$(serial)" -sha256 -days "$days" \
        -extfile "$work/ext.cnf" -extensions "$ext" -out "$work/$name.pem"
    ossl verify -CAfile "$work/ca.pem" "$work/$name.pem"
}
issue supporter "/O=RemoteSupport Development/CN=RemoteSupport Dev Supporter" supporter_ext
issue device    "/O=RemoteSupport Development/CN=RemoteSupport Dev Device"    device_ext

# ---------------------------------------------------------------- install
chmod 0600 "$work"/*.key
chmod 0644 "$work"/*.pem
for f in ca.key ca.pem supporter.key supporter.pem device.key device.pem; do
    mv -f -- "$work/$f" "$out/$f" || die "cannot write '$out/$f'"
done

# ---------------------------------------------------------------- pins
pin() {  # pin CERT -> "base64 hex" (SHA-256 over the DER SubjectPublicKeyInfo)
    local digest=$work/pin.bin
    openssl x509 -in "$1" -pubkey -noout | openssl pkey -pubin -outform DER \
        | openssl dgst -sha256 -binary >"$digest" 2>/dev/null || return 1
    [[ $(wc -c <"$digest") -eq 32 ]] || return 1
    echo "$(openssl base64 -A <"$digest") $(od -An -v -tx1 "$digest" | tr -d ' \n')"
}

pins=()
for name in ca supporter device; do
    p=$(pin "$out/$name.pem") || die "cannot compute the SPKI pin of '$out/$name.pem'"
    pins+=("$p")
done

echo "Wrote development certificates to $out (key type: $keytype, valid $days days):"
echo "  supporter SANs: $san_line"
i=0
for name in ca supporter device; do
    read -r b64 hex <<<"${pins[i]}"; i=$((i + 1))
    printf '%-10s %s\n' "$name:" "$out/$name.pem"
    printf '  SPKI pin: sha256/%s\n' "$b64"
    printf '  SPKI hex: %s\n' "$hex"
done
echo "Keys (mode 0600): $out/ca.key $out/supporter.key $out/device.key — never commit them."
