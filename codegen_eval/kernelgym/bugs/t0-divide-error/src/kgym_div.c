// SPDX-License-Identifier: GPL-2.0
/* running statistics: write 'add N' to record, 'avg' to print the mean, 'reset' */
#include <linux/module.h>
#include <linux/proc_fs.h>
#include <linux/uaccess.h>
#include <linux/slab.h>
#include <linux/string.h>


static u64 kgym_total;
static u32 kgym_count;
static DEFINE_MUTEX(kgym_lock);

static noinline u32 kgym_div_avg(void)
{
	return div_u64(kgym_total, kgym_count);
}

static ssize_t kgym_div_write(struct file *file, const char __user *ubuf,
			      size_t len, loff_t *off)
{
	char cmd[24] = {};
	unsigned int v;

	if (len >= sizeof(cmd))
		return -EINVAL;
	if (copy_from_user(cmd, ubuf, len))
		return -EFAULT;
	strim(cmd);
	mutex_lock(&kgym_lock);
	if (sscanf(cmd, "add %u", &v) == 1) {
		kgym_total += v;
		kgym_count++;
	} else if (!strcmp(cmd, "avg")) {
		pr_info("kgym_div: avg %u\n", kgym_div_avg());
	} else if (!strcmp(cmd, "reset")) {
		kgym_total = 0;
		kgym_count = 0;
	}
	mutex_unlock(&kgym_lock);
	return len;
}

static const struct proc_ops kgym_div_ops = {
	.proc_write = kgym_div_write,
};

static int __init kgym_div_init(void)
{
	if (!proc_create("kgym_div", 0222, NULL, &kgym_div_ops))
		return -ENOMEM;
	return 0;
}

static void __exit kgym_div_exit(void)
{
	remove_proc_entry("kgym_div", NULL);
}

module_init(kgym_div_init);
module_exit(kgym_div_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("kernel-gym bundled bug: kgym_div");
