import pandas as pd
import matplotlib.pyplot as plt
df = pd.read_csv("sales.csv")
total = df.groupby("month", sort=False)["sales"].sum()
print(total.to_string())
total.plot(kind="bar", title="Sales by month")
plt.savefig("sales.png")
plt.close()
df.pivot(index="month", columns="region", values="sales").plot(title="Sales by region")
plt.show()
