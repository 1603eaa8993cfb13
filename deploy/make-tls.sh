#!/bin/sh
# Makes TLS material for local use and for the e2e suites, into OUTDIR:
#   server.crt server.key   self-signed, CN=localhost, SAN localhost, 127.0.0.1, ::1
#                           (clients trust server.crt itself as their root)
#   ca.crt ca.key           a throwaway CA for client certificates
#   client.crt client.key   a client certificate signed by ca.crt
# Use:  agenthubd ... --tls-cert OUTDIR/server.crt --tls-key OUTDIR/server.key \
#                     [--tls-client-ca OUTDIR/ca.crt]
# Never use these for anything but local testing.
set -eu
if [ $# -ne 1 ]; then
    echo "usage: $0 OUTDIR" >&2
    exit 2
fi
out=$1
days=${TLS_DAYS:-825}
mkdir -p "$out"
umask 077

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -sha256 \
    -days "$days" -subj "/CN=localhost" \
    -addext "subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1" \
    -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,digitalSignature,keyCertSign" \
    -addext "extendedKeyUsage=serverAuth" \
    -keyout "$out/server.key" -out "$out/server.crt" 2>/dev/null

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -sha256 \
    -days "$days" -subj "/CN=agenthub local client CA" \
    -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign" \
    -keyout "$out/ca.key" -out "$out/ca.crt" 2>/dev/null

openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -sha256 \
    -subj "/CN=agenthub-client" -keyout "$out/client.key" -out "$out/client.csr" 2>/dev/null
ext=$(mktemp)
trap 'rm -f "$ext"' EXIT
printf '%s\n' "basicConstraints=critical,CA:FALSE" \
    "keyUsage=critical,digitalSignature" "extendedKeyUsage=clientAuth" > "$ext"
openssl x509 -req -sha256 -days "$days" -in "$out/client.csr" -CA "$out/ca.crt" \
    -CAkey "$out/ca.key" -CAcreateserial -extfile "$ext" -out "$out/client.crt" 2>/dev/null
rm -f "$out/client.csr" "$out/ca.srl"
chmod 644 "$out/server.crt" "$out/ca.crt" "$out/client.crt"
echo "wrote $out/server.crt $out/server.key $out/ca.crt $out/ca.key $out/client.crt $out/client.key"
