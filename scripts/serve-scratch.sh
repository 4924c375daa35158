# Sourced by the scripts that test a running server: builds majordomus, serves a scratch
# repository in "$work" (which the caller creates and removes), and sets `binary`,
# `server_pid`, `url` and `token`. The caller's EXIT trap ends `server_pid`.

cargo build --quiet -p majordomus
target_dir=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
binary="$target_dir/debug/majordomus"
repo="$work/repo"
git init --quiet -b main "$repo"
git -C "$repo" -c user.name=ci -c user.email=ci@localhost commit --quiet --allow-empty -m init
"$binary" serve --repo "$repo" > "$work/serve.out" 2> "$work/serve.err" &
server_pid=$!
lease="$repo/.git/majordomus/lease.json"
for _ in $(seq 1 100); do
  if [ -s "$lease" ] && grep -q '"url": "http' "$lease"; then break; fi
  sleep 0.1
done
url=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["url"])' "$lease")
token=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["token"])' "$lease")
