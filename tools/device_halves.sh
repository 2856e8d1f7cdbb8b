# Sourced by the tools that send files to a lent GPU (tools/light_sim_v2_gpu.sh,
# tools/light_gpu_train.sh). A device call sends at most 64 MiB with the tracked tree, so a file
# larger than that (a 98 MB model, an 84 MB wheel) travels in two halves, one in each of two
# calls made back to back, and is joined and checked on the device.

# split_halves FILE NAME: .gpu-a/NAME.part-a, .gpu-b/NAME.part-b, and FILE's name and sha256 in .gpu-b.
split_halves() {
    local file="$1" name="$2" half
    half=$(( ($(stat -c %s "$file") + 1) / 2 ))
    head -c "$half" "$file" > ".gpu-a/$name.part-a"
    tail -c +"$((half + 1))" "$file" > ".gpu-b/$name.part-b"
    basename "$file" > ".gpu-b/$name.name"
    sha256sum "$file" | cut -d' ' -f1 > ".gpu-b/$name.sha256"
}

# join_halves STAGE NAME: STAGE/<FILE's name> from STAGE/NAME.part-a (copied there by the first
# call) and .gpu-b/NAME.part-b, checked against its sha256; prints the joined file's path.
join_halves() {
    local stage="$1" name="$2" joined
    joined="$stage/$(cat ".gpu-b/$name.name")"
    cat "$stage/$name.part-a" ".gpu-b/$name.part-b" > "$joined"
    echo "$(cat ".gpu-b/$name.sha256")  $joined" | sha256sum -c --quiet >&2 || return 1  # errexit stops short of $(...)
    echo "$joined"
}

# device_wheel DIR SPEC: download SPEC's wheel for the device's Python (3.12, x86-64) into DIR.
device_wheel() {
    "${PYTHON:-python}" -m pip download -q --no-deps --only-binary=:all: \
      --python-version 3.12 --implementation cp --platform manylinux2014_x86_64 -d "$1" "$2"
}
