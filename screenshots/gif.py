"""A few seconds of a live display as an animated GIF.

Runs COMMAND in a detached tmux pane, captures the screen (with its colours)
every FRAME_S seconds, then draws each capture with tui-shot (which replays it
in a pane of the same size and renders the emulator's grid cell by cell) and
joins the pictures.

    python3 gif.py COMMAND OUT.gif TUI_SHOT
"""
import os
import subprocess
import sys
import tempfile
import time

from PIL import Image

FRAMES = 16
FRAME_S = 0.5
SETTLE_S = 2.0


def capture_frames(command, cols, rows, folder):
    session = f"gif{os.getpid()}"
    subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", cols, "-y", rows,
                    f"TERM=xterm-256color {command}; sleep 30"], check=True)
    try:
        time.sleep(SETTLE_S)
        paths = []
        for i in range(FRAMES):
            screen = subprocess.run(["tmux", "capture-pane", "-t", session, "-e", "-p"],
                                    check=True, capture_output=True).stdout
            path = os.path.join(folder, f"frame{i:02}.ans")
            # No newline after the last row, or the replay would scroll by one.
            with open(path, "wb") as f:
                f.write(screen.rstrip(b"\n"))
            paths.append(path)
            time.sleep(FRAME_S)
        return paths
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], check=False)


def main():
    command, out, shot = sys.argv[1:4]
    cols, rows = os.environ.get("COLS", "120"), os.environ.get("ROWS", "36")
    with tempfile.TemporaryDirectory() as folder:
        images = []
        for ans in capture_frames(command, cols, rows, folder):
            base = ans[:-len(".ans")] + "-shot"
            subprocess.run([shot, base, f"cat {ans}", "1"], check=True,
                           stdout=subprocess.DEVNULL)
            images.append(Image.open(base + ".png").convert("RGB"))
        first = images[0]
        palette = [im.quantize(colors=64) for im in images]
        palette[0].save(out, save_all=True, append_images=palette[1:],
                        duration=int(FRAME_S * 1000), loop=0, optimize=True)
        print(f"{out}: {len(images)} frames, {first.size[0]}x{first.size[1]}")


if __name__ == "__main__":
    main()
