"""Stand-in data for tools/d2l_chapters.py: synthetic files in the formats the d2l book
downloads (there is no network here), written once per scratch folder, outside the timed
runs. Accuracies on them mean nothing; they let a chapter's code run at a realistic size.
"""
import os

def write_stand_in_data(scratch, images=(60000, 10000)):
    """Synthetic files in the formats the book downloads: `images` (training, test) images
    of MNIST and Fashion-MNIST (the real sizes by default), the house prices' real sizes."""
    from vision_files import write_mnist
    mx_home = os.path.join(scratch, "mxnet")
    for name, seed, balanced in (("fashion-mnist", 0, True), ("mnist", 1, False)):
        root = os.path.join(mx_home, "datasets", name)
        marker = os.path.join(root, "stand-in-size.txt")
        size = f"{images[0]} {images[1]}\n"
        written = open(marker).read() if os.path.exists(marker) else None
        if written != size:
            # Fashion-MNIST has exactly 6,000/1,000 images of each class (the book relies
            # on it: 2,000 test images of classes 0 and 1); MNIST's counts vary
            write_mnist(root, n_train=images[0], n_test=images[1], seed=seed,
                        balanced=balanced)
            with open(marker, "w") as f:
                f.write(size)
    data = os.path.join(scratch, "data")
    os.makedirs(data, exist_ok=True)
    _write_house_prices(data)
    _write_bananas(data)
    _write_time_machine(data)
    _write_fra_eng(data)
    _write_wikitext(data)
    _write_banana_photo(os.path.join(scratch, "img"))
    return mx_home


def _write_banana_photo(folder):
    """The book's img/banana.jpg, which SSD's last cells detect bananas in."""
    path = os.path.join(folder, "banana.jpg")
    if os.path.exists(path):
        return
    import numpy as onp
    from PIL import Image
    os.makedirs(folder, exist_ok=True)
    image = onp.random.RandomState(5).randint(0, 120, (256, 256, 3)).astype(onp.uint8)
    image[90:160, 60:190] = (230, 200, 40)
    Image.fromarray(image).save(path, format="JPEG")


def _words(rs, count, vocabulary):
    """`count` words drawn with Zipf-like frequencies from `vocabulary`."""
    import numpy as onp
    p = 1.0 / onp.arange(1, len(vocabulary) + 1)
    return [vocabulary[k] for k in rs.choice(len(vocabulary), count, p=p / p.sum())]


def _vocabulary(rs, size, letters="abcdefghijklmnopqrstuvwxyz"):
    return ["".join(rs.choice(list(letters), rs.randint(1, 9))) for _ in range(size)]


def _write_time_machine(folder):
    """The Time Machine's size (about 32,000 words in 3,200 lines of English-like text)."""
    import numpy as onp
    path = os.path.join(folder, "timemachine.txt")
    if os.path.exists(path):
        return
    rs = onp.random.RandomState(3)
    words = _words(rs, 32000, _vocabulary(rs, 4500))
    lines = [" ".join(words[k:k + 10]).capitalize() + "." for k in range(0, len(words), 10)]
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def _write_fra_eng(folder, pairs=150000):
    """The English-French pairs' zip (fra-eng/fra.txt: 'English<TAB>French' lines)."""
    import zipfile
    import numpy as onp
    path = os.path.join(folder, "fra-eng.zip")
    if os.path.exists(path):
        return
    rs = onp.random.RandomState(4)
    english, french = _vocabulary(rs, 3000), _vocabulary(rs, 4000, "abcdeéèfghijlmnopqrstuvàç")
    lengths = rs.randint(1, 8, pairs)
    src, tgt = _words(rs, int(lengths.sum()), english), _words(rs, int(lengths.sum()), french)
    marks = rs.choice([".", "!", "?"], pairs)
    lines, at = [], 0
    for n, mark in zip(lengths, marks):
        sentence = (" ".join(src[at:at + n]).capitalize() + mark,
                    " ".join(tgt[at:at + n]).capitalize() + "\u202f" + mark)
        lines.append("\t".join(sentence))
        at += n
    with zipfile.ZipFile(path + ".part", "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("fra-eng/fra.txt", "\n".join(lines) + "\n")
    os.replace(path + ".part", path)


def _write_wikitext(folder, paragraphs=3000):
    """WikiText-2's zip (wikitext-2/wiki.train.tokens: one paragraph a line, sentences
    joined by ' . '), smaller than the real 36,718 lines: BERT's chapters build their
    pretraining examples from it in Python."""
    import zipfile
    import numpy as onp
    path = os.path.join(folder, "wikitext-2-v1.zip")
    if os.path.exists(path):
        return
    rs = onp.random.RandomState(6)
    vocabulary = _vocabulary(rs, 6000)
    lines = []
    for _ in range(paragraphs):
        sentences = [" ".join(_words(rs, rs.randint(5, 25), vocabulary))
                     for _ in range(rs.randint(2, 9))]
        lines.append(" " + " . ".join(sentences) + " . ")
    with zipfile.ZipFile(path + ".part", "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("wikitext-2/wiki.train.tokens", "\n".join(lines) + "\n")
    os.replace(path + ".part", path)


def _write_bananas(folder, sizes=(("bananas_train", 1000), ("bananas_val", 100))):
    """The banana detection set (object detection, SSD) as the book's zip: 256x256 PNGs,
    one box each, listed in label.csv (img_name,label,xmin,ymin,xmax,ymax)."""
    import io
    import zipfile
    import numpy as onp
    path = os.path.join(folder, "banana-detection.zip")
    if os.path.exists(path):
        return
    from PIL import Image
    rs = onp.random.RandomState(2)
    with zipfile.ZipFile(path + ".part", "w") as z:
        for part, count in sizes:
            rows = ["img_name,label,xmin,ymin,xmax,ymax"]
            for k in range(count):
                image = rs.randint(0, 120, (256, 256, 3)).astype(onp.uint8)
                w, h = rs.randint(30, 90, 2)
                x0, y0 = rs.randint(0, 256 - w), rs.randint(0, 256 - h)
                image[y0:y0 + h, x0:x0 + w] = (230, 200, 40)
                png = io.BytesIO()
                Image.fromarray(image).save(png, format="PNG")
                z.writestr(f"banana-detection/{part}/images/{k}.png", png.getvalue())
                rows.append(f"{k}.png,0,{x0},{y0},{x0 + w},{y0 + h}")
            z.writestr(f"banana-detection/{part}/label.csv", "\n".join(rows) + "\n")
    os.replace(path + ".part", path)


def _write_house_prices(folder):
    import numpy as onp
    train = os.path.join(folder, "kaggle_house_pred_train.csv")
    if os.path.exists(train):
        return
    rs = onp.random.RandomState(0)
    columns = ["Id"] + [f"Num{i}" for i in range(36)] + [f"Cat{i}" for i in range(43)]
    for path, rows, first_id, with_price in ((train, 1460, 1, True),
                                             (os.path.join(folder, "kaggle_house_pred_test.csv"),
                                              1459, 1461, False)):
        num = rs.randint(0, 500, (rows, 36)).astype(float)
        num[rs.rand(rows, 36) < 0.05] = onp.nan
        cats = onp.array(list("ABCDE"), dtype=object)[rs.randint(0, 5, (rows, 43))]
        cats[rs.rand(rows, 43) < 0.05] = ""
        header = columns + (["SalePrice"] if with_price else [])
        with open(path, "w") as f:
            f.write(",".join(header) + "\n")
            for r in range(rows):
                cells = [str(first_id + r)]
                cells += ["NA" if onp.isnan(v) else str(int(v)) for v in num[r]]
                cells += [c or "NA" for c in cats[r]]
                if with_price:
                    cells.append(str(int(50000 + 300 * num[r, 0] if not onp.isnan(num[r, 0])
                                         else 150000)))
                f.write(",".join(cells) + "\n")
