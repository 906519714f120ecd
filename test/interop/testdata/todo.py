import os
items = open("notes/todo.txt").read().splitlines()
os.makedirs("out", exist_ok=True)
with open("out/done.txt", "w") as f:
    f.write("".join("[x] " + item + "\n" for item in items))
print(len(items), "items")
