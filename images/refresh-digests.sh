#!/usr/bin/env bash
# Print the current digest of every base image named in images/*.Dockerfile, next to the
# digest pinned there, so that a maintainer can update the pins deliberately.
# Needs registry access and one of: docker (buildx imagetools) or skopeo.
set -euo pipefail
cd "$(dirname "$0")"
for file in *.Dockerfile; do
    grep -E '^# tag: ' "$file" | sed -E 's/^# tag: ([^ ]+).*/\1/' | while read -r tag; do
        pinned=$(grep -A1 -F "# tag: $tag" "$file" | grep -oE 'sha256:[0-9a-f]{64}' | head -1)
        if command -v skopeo >/dev/null; then
            current=$(skopeo inspect --override-os linux --override-arch amd64 "docker://$tag" \
                      --format '{{.Digest}}')
        else
            current=$(docker buildx imagetools inspect "$tag" --format '{{json .Manifest}}' \
                      | python3 -c 'import json,sys; print(json.load(sys.stdin)["digest"])')
        fi
        state=$([ "$pinned" = "$current" ] && echo "up to date" || echo "CHANGED")
        printf '%-28s %-55s pinned %s current %s (%s)\n' "$file" "$tag" "$pinned" "$current" "$state"
    done
done
